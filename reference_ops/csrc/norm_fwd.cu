// CUDA forward kernels of reference_ops::layer_norm_fwd and
// reference_ops::rms_norm_fwd.
//
// One kernel family serves both ops (RMSNorm is LayerNorm without centring and
// bias), chosen by row width in dispatch_norm_fwd:
//   * norm_fwd_kernel: the row lives in registers, in x's own dtype, spread
//     over threads_per_row threads (a power of two, 1..1024), up to 64 bytes
//     (and 8 packs) per thread. Statistics use the exact two-pass formula over the
//     registers: mean = sum(x)/N, var = sum((x-mean)^2)/N.
//   * norm_fwd_uncached_kernel: wider rows; one block per row reads the row
//     twice (the second read mostly hits L2). Statistics use shifted sums
//     (Chan, Golub & LeVeque 1983: sums of x - x[0] and (x - x[0])^2).

#include "norm.h"
#include "norm_common.cuh"

#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <torch/library.h>

namespace reference_ops {
namespace cuda {
namespace {

// Packs each thread keeps in registers for a row, aimed for when choosing
// threads_per_row: four 16-byte loads in flight per thread.
constexpr int64_t kTargetPacksPerThread = 4;

// Bytes of the row one thread of the register kernel holds (at most 8 packs):
// beyond 64 bytes ptxas spills at the 64-register cap of 1024-thread blocks.
constexpr int kMaxRowBytesPerThread = 64;

// Block size of the uncached kernel (one row per block).
constexpr int kUncachedThreads = 1024;

// -----------------------------------------------------------------------------
// Kernels
// -----------------------------------------------------------------------------

template <typename T, typename W, int kVec, int kPacks>
__global__ void __launch_bounds__(kMaxThreadsPerRow, 1) norm_fwd_kernel(
    const T* __restrict__ x,
    const W* __restrict__ weight,
    const W* __restrict__ bias,
    T* __restrict__ y,
    at::opmath_type<T>* __restrict__ mean_out,
    at::opmath_type<T>* __restrict__ rstd_out,
    int64_t rows,
    int64_t cols,
    int threads_per_row,
    at::opmath_type<T> eps,
    bool rms) {
  using acc_t = at::opmath_type<T>;
  __shared__ acc_t scratch[32];
  const int lane = threadIdx.x & (threads_per_row - 1);
  const int group = threadIdx.x / threads_per_row;
  const int groups = blockDim.x / threads_per_row;
  const int64_t num_packs = cols / kVec;
  const acc_t inv_cols = acc_t(1) / static_cast<acc_t>(cols);

  // The loop bound is uniform over the block so every lane joins the shuffles.
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * groups; base < rows;
       base += static_cast<int64_t>(gridDim.x) * groups) {
    const int64_t row = base + group;
    const bool row_ok = row < rows;
    const T* xr = x + row * cols;

    Pack<T, kVec> xp[kPacks];
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      const int64_t idx = lane + static_cast<int64_t>(p) * threads_per_row;
      if (row_ok && idx < num_packs) {
        xp[p] = load_pack<T, kVec>(xr, idx);
      } else {
#pragma unroll
        for (int k = 0; k < kVec; ++k) {
          xp[p].v[k] = T(0);
        }
      }
    }

    acc_t mean = acc_t(0);
    if (!rms) {
      acc_t sum = acc_t(0);
#pragma unroll
      for (int p = 0; p < kPacks; ++p) {
#pragma unroll
        for (int k = 0; k < kVec; ++k) {
          sum += static_cast<acc_t>(xp[p].v[k]);
        }
      }
      mean = row_sum(sum, threads_per_row, scratch) * inv_cols;
    }
    acc_t sq = acc_t(0);
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      const int64_t idx = lane + static_cast<int64_t>(p) * threads_per_row;
      if (idx < num_packs) {
#pragma unroll
        for (int k = 0; k < kVec; ++k) {
          const acc_t d = static_cast<acc_t>(xp[p].v[k]) - mean;
          sq += d * d;
        }
      }
    }
    const acc_t rstd = rsqrt_acc(row_sum(sq, threads_per_row, scratch) * inv_cols + eps);

    if (row_ok) {
      if (lane == 0) {
        if (mean_out != nullptr) {
          mean_out[row] = mean;
        }
        rstd_out[row] = rstd;
      }
      T* yr = y + row * cols;
#pragma unroll
      for (int p = 0; p < kPacks; ++p) {
        const int64_t idx = lane + static_cast<int64_t>(p) * threads_per_row;
        if (idx < num_packs) {
          Pack<T, kVec> yp;
#pragma unroll
          for (int k = 0; k < kVec; ++k) {
            yp.v[k] = static_cast<T>((static_cast<acc_t>(xp[p].v[k]) - mean) * rstd);
          }
          if (weight != nullptr) {
            const Pack<W, kVec> wp = load_pack<W, kVec>(weight, idx);
            Pack<W, kVec> bp;
            if (bias != nullptr) {
              bp = load_pack<W, kVec>(bias, idx);
            }
#pragma unroll
            for (int k = 0; k < kVec; ++k) {
              acc_t v = (static_cast<acc_t>(xp[p].v[k]) - mean) * rstd * static_cast<acc_t>(wp.v[k]);
              if (bias != nullptr) {
                v += static_cast<acc_t>(bp.v[k]);
              }
              yp.v[k] = static_cast<T>(v);
            }
          } else if (bias != nullptr) {
            const Pack<W, kVec> bp = load_pack<W, kVec>(bias, idx);
#pragma unroll
            for (int k = 0; k < kVec; ++k) {
              yp.v[k] = static_cast<T>(
                  (static_cast<acc_t>(xp[p].v[k]) - mean) * rstd + static_cast<acc_t>(bp.v[k]));
            }
          }
          store_pack<T, kVec>(yr, idx, yp);
        }
      }
    }
  }
}

template <typename T, typename W, int kVec>
__global__ void __launch_bounds__(kUncachedThreads, 1) norm_fwd_uncached_kernel(
    const T* __restrict__ x,
    const W* __restrict__ weight,
    const W* __restrict__ bias,
    T* __restrict__ y,
    at::opmath_type<T>* __restrict__ mean_out,
    at::opmath_type<T>* __restrict__ rstd_out,
    int64_t rows,
    int64_t cols,
    at::opmath_type<T> eps,
    bool rms) {
  using acc_t = at::opmath_type<T>;
  __shared__ acc_t scratch[64];
  const int64_t num_packs = cols / kVec;
  const acc_t inv_cols = acc_t(1) / static_cast<acc_t>(cols);

  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* xr = x + row * cols;
    const acc_t shift = rms ? acc_t(0) : static_cast<acc_t>(xr[0]);
    acc_t s1 = acc_t(0);
    acc_t s2 = acc_t(0);
#pragma unroll 4
    for (int64_t idx = threadIdx.x; idx < num_packs; idx += blockDim.x) {
      const Pack<T, kVec> xp = load_pack<T, kVec>(xr, idx);
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        const acc_t d = static_cast<acc_t>(xp.v[k]) - shift;
        s1 += d;
        s2 += d * d;
      }
    }
    const Pair<acc_t> tot = row_sum2(Pair<acc_t>{s1, s2}, blockDim.x, scratch);
    const acc_t shifted_mean = tot.a * inv_cols;
    const acc_t var = rms ? tot.b * inv_cols : max(tot.b * inv_cols - shifted_mean * shifted_mean, acc_t(0));
    const acc_t mean = rms ? acc_t(0) : shift + shifted_mean;
    const acc_t rstd = rsqrt_acc(var + eps);
    if (threadIdx.x == 0) {
      if (mean_out != nullptr) {
        mean_out[row] = mean;
      }
      rstd_out[row] = rstd;
    }
    T* yr = y + row * cols;
#pragma unroll 4
    for (int64_t idx = threadIdx.x; idx < num_packs; idx += blockDim.x) {
      const Pack<T, kVec> xp = load_pack<T, kVec>(xr, idx);
      Pack<W, kVec> wp;
      Pack<W, kVec> bp;
      if (weight != nullptr) {
        wp = load_pack<W, kVec>(weight, idx);
      }
      if (bias != nullptr) {
        bp = load_pack<W, kVec>(bias, idx);
      }
      Pack<T, kVec> yp;
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        acc_t v = (static_cast<acc_t>(xp.v[k]) - mean) * rstd;
        if (weight != nullptr) {
          v *= static_cast<acc_t>(wp.v[k]);
        }
        if (bias != nullptr) {
          v += static_cast<acc_t>(bp.v[k]);
        }
        yp.v[k] = static_cast<T>(v);
      }
      store_pack<T, kVec>(yr, idx, yp);
    }
  }
}

// -----------------------------------------------------------------------------
// Launchers
// -----------------------------------------------------------------------------

template <typename T, typename W>
struct FwdArgs {
  const T* x;
  const W* weight;
  const W* bias;
  T* y;
  at::opmath_type<T>* mean;
  at::opmath_type<T>* rstd;
  int64_t rows;
  int64_t cols;
  at::opmath_type<T> eps;
  bool rms;
};

template <typename T, typename W, int kVec>
void launch_norm_fwd(const FwdArgs<T, W>& a) {
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  constexpr int kMaxPacks = std::max<int>(1, std::min<int>(8, kMaxRowBytesPerThread / (kVec * sizeof(T))));
  const RowConfig cfg = choose_row_config(a.cols / kVec, kTargetPacksPerThread, kMaxThreadsPerRow);
  if (cfg.packs_per_thread > kMaxPacks) {
    auto kernel = norm_fwd_uncached_kernel<T, W, kVec>;
    const int64_t grid = std::min(a.rows, resident_blocks(kernel, kUncachedThreads, 0));
    kernel<<<grid, kUncachedThreads, 0, stream>>>(
        a.x, a.weight, a.bias, a.y, a.mean, a.rstd, a.rows, a.cols, a.eps, a.rms);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return;
  }
  packs_switch(cfg.packs_per_thread, [&](auto packs) {
    constexpr int kPacks = decltype(packs)::value;
    if constexpr (kPacks <= kMaxPacks) {
      auto kernel = norm_fwd_kernel<T, W, kVec, kPacks>;
      // Rows wider than a warp take a whole block; narrower rows share one.
      const int block = cfg.threads_per_row <= 32 ? kRowsBlockThreads : cfg.threads_per_row;
      const int64_t groups = block / cfg.threads_per_row;
      const int64_t grid = std::min((a.rows + groups - 1) / groups, resident_blocks(kernel, block, 0));
      kernel<<<grid, block, 0, stream>>>(
          a.x, a.weight, a.bias, a.y, a.mean, a.rstd, a.rows, a.cols, cfg.threads_per_row, a.eps, a.rms);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    } else {
      TORCH_CHECK(false, "reference_ops: internal error, forward packs per thread ", kPacks);
    }
  });
}

// The one place that picks a kernel: 16-byte packs when the row width and
// every pointer allow them, else single elements; then by row width.
template <typename T, typename W>
void dispatch_norm_fwd(const FwdArgs<T, W>& a) {
  constexpr int kVec = kPackBytes / sizeof(T);
  const bool vectorised = a.cols % kVec == 0 && is_aligned(a.x, kPackBytes) && is_aligned(a.y, kPackBytes) &&
      is_aligned(a.weight, sizeof(W) * kVec) && is_aligned(a.bias, sizeof(W) * kVec);
  if (vectorised) {
    launch_norm_fwd<T, W, kVec>(a);
  } else {
    launch_norm_fwd<T, W, 1>(a);
  }
}

// -----------------------------------------------------------------------------
// Typed implementation and dtype dispatch
// -----------------------------------------------------------------------------

template <typename T, typename W>
void norm_fwd_typed(
    const at::Tensor& x,
    const at::Tensor& weight,
    const at::Tensor& bias,
    at::Tensor& y,
    at::Tensor& mean,
    at::Tensor& rstd,
    NormShape shape,
    double eps,
    bool rms) {
  using acc_t = at::opmath_type<T>;
  FwdArgs<T, W> a{
      x.const_data_ptr<T>(),
      weight.defined() ? weight.const_data_ptr<W>() : nullptr,
      bias.defined() ? bias.const_data_ptr<W>() : nullptr,
      y.mutable_data_ptr<T>(),
      mean.defined() ? mean.mutable_data_ptr<acc_t>() : nullptr,
      rstd.mutable_data_ptr<acc_t>(),
      shape.rows,
      shape.cols,
      static_cast<acc_t>(eps),
      rms};
  dispatch_norm_fwd<T, W>(a);
}

void norm_fwd_cuda(
    const at::Tensor& x,
    const at::Tensor& weight,
    const at::Tensor& bias,
    at::Tensor& y,
    at::Tensor& mean,
    at::Tensor& rstd,
    NormShape shape,
    double eps,
    bool rms) {
  if (shape.rows == 0) {
    return;
  }
  dispatch_types(x.scalar_type(), has_float_params(x, weight, bias), [&](auto t, auto w) {
    norm_fwd_typed<decltype(t), decltype(w)>(x, weight, bias, y, mean, rstd, shape, eps, rms);
  });
}

} // namespace
} // namespace cuda

// The shared entry points of norm.cpp with the CUDA backend.
TORCH_LIBRARY_IMPL(reference_ops, CUDA, m) {
  m.impl("layer_norm_fwd", [](const at::Tensor& x, c10::IntArrayRef shape, const std::optional<at::Tensor>& w,
                              const std::optional<at::Tensor>& b, double eps) {
    return layer_norm_fwd(x, shape, w, b, eps, cuda::norm_fwd_cuda);
  });
  m.impl("rms_norm_fwd", [](const at::Tensor& x, c10::IntArrayRef shape, const std::optional<at::Tensor>& w,
                            double eps) {
    return rms_norm_fwd(x, shape, w, eps, cuda::norm_fwd_cuda);
  });
}

} // namespace reference_ops
