// CUDA backward kernels of reference_ops::layer_norm_bwd and
// reference_ops::rms_norm_bwd.
//
// With xhat = (x - mean) * rstd and g = dy * weight (mean = 0 for RMSNorm):
//   dx      = rstd * (g - mean(g) - xhat * mean(g * xhat))   (RMSNorm: no mean(g) term)
//   dweight = sum over rows of dy * xhat,  dbias = sum over rows of dy.
// No floating-point atomics: every block writes its partial dweight / dbias row
// to a workspace and column_sum_kernel adds the partial rows in a fixed order,
// so results are bitwise reproducible.
//
// One kernel family, chosen by row width in dispatch_norm_bwd:
//   * norm_bwd_kernel: persistent grid; x and dy of a row live in registers,
//     the thread's dweight / dbias columns accumulate in registers across all
//     rows the block visits, then the row groups of a block are added in
//     shared memory. One pass over x and dy.
//   * wide rows (more than kMaxBwdAccBytes of accumulators per thread):
//     norm_bwd_row_stats_kernel computes mean(g) and mean(g * xhat) per row,
//     then norm_bwd_columns_kernel walks column strips over chunks of rows,
//     writing dx and per-chunk partials. Two passes over x and dy.

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

// Threads per block of the register kernel.
constexpr int kBwdThreads = 512;

// Bytes of dweight (and as many of dbias) accumulators one thread may keep in
// registers; also bounds the shared memory of the block reduction (32 KiB).
constexpr int kMaxBwdAccBytes = 64;

// Threads per block of the wide-row kernels.
constexpr int kWideStatsThreads = 1024;
constexpr int kColumnsThreads = 256;

// Tile of column_sum_kernel: 32 columns x 16 partial-row slices.
constexpr int kSumCols = 32;
constexpr int kSumSlices = 16;

// -----------------------------------------------------------------------------
// Device helpers
// -----------------------------------------------------------------------------

template <typename T, int kVec>
__device__ __forceinline__ void zero_pack(Pack<T, kVec>& p) {
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    p.v[k] = T(0);
  }
}

// -----------------------------------------------------------------------------
// Kernels
// -----------------------------------------------------------------------------

template <typename T, typename W, int kVec, int kPacks>
__global__ void __launch_bounds__(kBwdThreads, 1) norm_bwd_kernel(
    const T* __restrict__ dy,
    const T* __restrict__ x,
    const at::opmath_type<T>* __restrict__ mean,
    const at::opmath_type<T>* __restrict__ rstd,
    const W* __restrict__ weight,
    T* __restrict__ dx,
    at::opmath_type<T>* __restrict__ dw_part,
    at::opmath_type<T>* __restrict__ db_part,
    int64_t rows,
    int64_t cols,
    int threads_per_row) {
  using acc_t = at::opmath_type<T>;
  constexpr int kElems = kPacks * kVec;
  __shared__ acc_t scratch[64];
  __shared__ acc_t group_partials[kMaxBwdAccBytes / sizeof(acc_t) * kBwdThreads];
  const int lane = threadIdx.x & (threads_per_row - 1);
  const int group = threadIdx.x / threads_per_row;
  const int groups = blockDim.x / threads_per_row;
  const int64_t num_packs = cols / kVec;
  const acc_t inv_cols = acc_t(1) / static_cast<acc_t>(cols);

  // The thread's columns are the same for every row: load weight once.
  acc_t w[kElems];
#pragma unroll
  for (int p = 0; p < kPacks; ++p) {
    const int64_t idx = lane + static_cast<int64_t>(p) * threads_per_row;
    Pack<W, kVec> wp;
    if (weight != nullptr && idx < num_packs) {
      wp = load_pack<W, kVec>(weight, idx);
    } else {
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        wp.v[k] = W(1);
      }
    }
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      w[p * kVec + k] = static_cast<acc_t>(wp.v[k]);
    }
  }
  acc_t dw_acc[kElems];
  acc_t db_acc[kElems];
#pragma unroll
  for (int e = 0; e < kElems; ++e) {
    dw_acc[e] = acc_t(0);
    db_acc[e] = acc_t(0);
  }

  for (int64_t base = static_cast<int64_t>(blockIdx.x) * groups; base < rows;
       base += static_cast<int64_t>(gridDim.x) * groups) {
    const int64_t row = base + group;
    const bool row_ok = row < rows;
    Pack<T, kVec> xp[kPacks];
    Pack<T, kVec> gp[kPacks];
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      const int64_t idx = lane + static_cast<int64_t>(p) * threads_per_row;
      if (row_ok && idx < num_packs) {
        xp[p] = load_pack<T, kVec>(x + row * cols, idx);
        gp[p] = load_pack<T, kVec>(dy + row * cols, idx);
      } else {
        zero_pack(xp[p]);
        zero_pack(gp[p]);
      }
    }
    const acc_t m = (row_ok && mean != nullptr) ? mean[row] : acc_t(0);
    const acc_t r = row_ok ? rstd[row] : acc_t(0);
    acc_t sum_g = acc_t(0);
    acc_t sum_gx = acc_t(0);
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        const acc_t xhat = (static_cast<acc_t>(xp[p].v[k]) - m) * r;
        const acc_t g = static_cast<acc_t>(gp[p].v[k]) * w[p * kVec + k];
        sum_g += g;
        sum_gx += g * xhat;
      }
    }
    const Pair<acc_t> tot = row_sum2(Pair<acc_t>{sum_g, sum_gx}, threads_per_row, scratch);
    const acc_t mean_g = mean != nullptr ? tot.a * inv_cols : acc_t(0);
    const acc_t mean_gx = tot.b * inv_cols;
    if (row_ok) {
#pragma unroll
      for (int p = 0; p < kPacks; ++p) {
        const int64_t idx = lane + static_cast<int64_t>(p) * threads_per_row;
        if (idx < num_packs) {
          Pack<T, kVec> dp;
#pragma unroll
          for (int k = 0; k < kVec; ++k) {
            const acc_t xhat = (static_cast<acc_t>(xp[p].v[k]) - m) * r;
            const acc_t d = static_cast<acc_t>(gp[p].v[k]);
            dp.v[k] = static_cast<T>(r * (d * w[p * kVec + k] - mean_g - xhat * mean_gx));
            dw_acc[p * kVec + k] += d * xhat;
            db_acc[p * kVec + k] += d;
          }
          store_pack<T, kVec>(dx + row * cols, idx, dp);
        }
      }
    }
  }

  // Add the row groups of this block in a fixed order; one partial row per block.
  acc_t* const parts[2] = {dw_part, db_part};
  const acc_t* const accs[2] = {dw_acc, db_acc};
#pragma unroll
  for (int which = 0; which < 2; ++which) {
    acc_t* out = parts[which];
    if (out == nullptr) {
      continue;
    }
    out += static_cast<int64_t>(blockIdx.x) * cols;
    if (groups == 1) {
#pragma unroll
      for (int p = 0; p < kPacks; ++p) {
        const int64_t idx = lane + static_cast<int64_t>(p) * threads_per_row;
        if (idx < num_packs) {
#pragma unroll
          for (int k = 0; k < kVec; ++k) {
            out[idx * kVec + k] = accs[which][p * kVec + k];
          }
        }
      }
      continue;
    }
    __syncthreads();
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      const int64_t idx = lane + static_cast<int64_t>(p) * threads_per_row;
      if (idx < num_packs) {
#pragma unroll
        for (int k = 0; k < kVec; ++k) {
          group_partials[group * cols + idx * kVec + k] = accs[which][p * kVec + k];
        }
      }
    }
    __syncthreads();
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      acc_t s = acc_t(0);
      for (int g = 0; g < groups; ++g) {
        s += group_partials[g * cols + c];
      }
      out[c] = s;
    }
  }
}

template <typename T, typename W, int kVec>
__global__ void __launch_bounds__(kWideStatsThreads, 1) norm_bwd_row_stats_kernel(
    const T* __restrict__ dy,
    const T* __restrict__ x,
    const at::opmath_type<T>* __restrict__ mean,
    const at::opmath_type<T>* __restrict__ rstd,
    const W* __restrict__ weight,
    at::opmath_type<T>* __restrict__ row_stats,
    int64_t rows,
    int64_t cols) {
  using acc_t = at::opmath_type<T>;
  __shared__ acc_t scratch[64];
  const int64_t num_packs = cols / kVec;
  const acc_t inv_cols = acc_t(1) / static_cast<acc_t>(cols);
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const acc_t m = mean != nullptr ? mean[row] : acc_t(0);
    const acc_t r = rstd[row];
    acc_t sum_g = acc_t(0);
    acc_t sum_gx = acc_t(0);
#pragma unroll 4
    for (int64_t idx = threadIdx.x; idx < num_packs; idx += blockDim.x) {
      const Pack<T, kVec> xp = load_pack<T, kVec>(x + row * cols, idx);
      const Pack<T, kVec> gp = load_pack<T, kVec>(dy + row * cols, idx);
      Pack<W, kVec> wp;
      if (weight != nullptr) {
        wp = load_pack<W, kVec>(weight, idx);
      }
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        const acc_t xhat = (static_cast<acc_t>(xp.v[k]) - m) * r;
        acc_t g = static_cast<acc_t>(gp.v[k]);
        if (weight != nullptr) {
          g *= static_cast<acc_t>(wp.v[k]);
        }
        sum_g += g;
        sum_gx += g * xhat;
      }
    }
    const Pair<acc_t> tot = row_sum2(Pair<acc_t>{sum_g, sum_gx}, blockDim.x, scratch);
    if (threadIdx.x == 0) {
      row_stats[2 * row] = mean != nullptr ? tot.a * inv_cols : acc_t(0);
      row_stats[2 * row + 1] = tot.b * inv_cols;
    }
  }
}

template <typename T, typename W, int kVec>
__global__ void __launch_bounds__(kColumnsThreads) norm_bwd_columns_kernel(
    const T* __restrict__ dy,
    const T* __restrict__ x,
    const at::opmath_type<T>* __restrict__ mean,
    const at::opmath_type<T>* __restrict__ rstd,
    const W* __restrict__ weight,
    const at::opmath_type<T>* __restrict__ row_stats,
    T* __restrict__ dx,
    at::opmath_type<T>* __restrict__ dw_part,
    at::opmath_type<T>* __restrict__ db_part,
    int64_t rows,
    int64_t cols,
    int64_t rows_per_chunk) {
  using acc_t = at::opmath_type<T>;
  const int64_t num_packs = cols / kVec;
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= num_packs) {
    return;
  }
  acc_t w[kVec];
  Pack<W, kVec> wp;
  if (weight != nullptr) {
    wp = load_pack<W, kVec>(weight, idx);
  }
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    w[k] = weight != nullptr ? static_cast<acc_t>(wp.v[k]) : acc_t(1);
  }
  acc_t dw_acc[kVec];
  acc_t db_acc[kVec];
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    dw_acc[k] = acc_t(0);
    db_acc[k] = acc_t(0);
  }
  const int64_t row_begin = static_cast<int64_t>(blockIdx.y) * rows_per_chunk;
  const int64_t row_end = row_begin + rows_per_chunk < rows ? row_begin + rows_per_chunk : rows;
#pragma unroll 2
  for (int64_t row = row_begin; row < row_end; ++row) {
    const Pack<T, kVec> xp = load_pack<T, kVec>(x + row * cols, idx);
    const Pack<T, kVec> gp = load_pack<T, kVec>(dy + row * cols, idx);
    const acc_t m = mean != nullptr ? mean[row] : acc_t(0);
    const acc_t r = rstd[row];
    const acc_t mean_g = row_stats[2 * row];
    const acc_t mean_gx = row_stats[2 * row + 1];
    Pack<T, kVec> dp;
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      const acc_t xhat = (static_cast<acc_t>(xp.v[k]) - m) * r;
      const acc_t d = static_cast<acc_t>(gp.v[k]);
      dp.v[k] = static_cast<T>(r * (d * w[k] - mean_g - xhat * mean_gx));
      dw_acc[k] += d * xhat;
      db_acc[k] += d;
    }
    store_pack<T, kVec>(dx + row * cols, idx, dp);
  }
  const int64_t out = static_cast<int64_t>(blockIdx.y) * cols + idx * kVec;
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    if (dw_part != nullptr) {
      dw_part[out + k] = dw_acc[k];
    }
    if (db_part != nullptr) {
      db_part[out + k] = db_acc[k];
    }
  }
}

// out[c] = sum over p of part[p][c], in a fixed order (slices, then the tile).
// blockIdx.y picks the (part, out) pair: 0 -> dweight, 1 -> dbias, one launch for both.
template <typename acc_t, typename W>
__global__ void column_sum_kernel(
    const acc_t* __restrict__ part0,
    W* __restrict__ out0,
    const acc_t* __restrict__ part1,
    W* __restrict__ out1,
    int64_t parts,
    int64_t cols) {
  __shared__ acc_t tile[kSumSlices][kSumCols + 1];
  const acc_t* __restrict__ part = blockIdx.y == 0 ? part0 : part1;
  W* __restrict__ out = blockIdx.y == 0 ? out0 : out1;
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kSumCols + threadIdx.x;
  acc_t v = acc_t(0);
  if (c < cols) {
#pragma unroll 8
    for (int64_t p = threadIdx.y; p < parts; p += kSumSlices) {
      v += part[p * cols + c];
    }
  }
  tile[threadIdx.y][threadIdx.x] = v;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    acc_t s = acc_t(0);
#pragma unroll
    for (int i = 0; i < kSumSlices; ++i) {
      s += tile[i][threadIdx.x];
    }
    out[c] = static_cast<W>(s);
  }
}

// -----------------------------------------------------------------------------
// Launchers
// -----------------------------------------------------------------------------

template <typename T, typename W>
struct BwdArgs {
  const T* dy;
  const T* x;
  const at::opmath_type<T>* mean;
  const at::opmath_type<T>* rstd;
  const W* weight;
  T* dx;
  W* dweight;
  W* dbias;
  int64_t rows;
  int64_t cols;
  at::TensorOptions acc_options;
};

template <typename T, typename W>
void launch_column_sums(const BwdArgs<T, W>& a, const at::Tensor& dw_part, const at::Tensor& db_part, int64_t parts) {
  using acc_t = at::opmath_type<T>;
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const acc_t* part0 = a.dweight != nullptr ? dw_part.const_data_ptr<acc_t>() : db_part.const_data_ptr<acc_t>();
  W* out0 = a.dweight != nullptr ? a.dweight : a.dbias;
  const bool both = a.dweight != nullptr && a.dbias != nullptr;
  const acc_t* part1 = both ? db_part.const_data_ptr<acc_t>() : nullptr;
  W* out1 = both ? a.dbias : nullptr;
  const dim3 block(kSumCols, kSumSlices);
  const dim3 grid(static_cast<unsigned>((a.cols + kSumCols - 1) / kSumCols), both ? 2 : 1);
  column_sum_kernel<acc_t, W><<<grid, block, 0, stream>>>(part0, out0, part1, out1, parts, a.cols);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename acc_t>
acc_t* data_or_null(at::Tensor& t) {
  return t.defined() ? t.mutable_data_ptr<acc_t>() : nullptr;
}

template <typename T, typename W, int kVec>
void launch_norm_bwd_wide(const BwdArgs<T, W>& a) {
  using acc_t = at::opmath_type<T>;
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  at::Tensor row_stats = at::empty({a.rows, 2}, a.acc_options);
  {
    auto kernel = norm_bwd_row_stats_kernel<T, W, kVec>;
    const int64_t grid = std::min(a.rows, resident_blocks(kernel, kWideStatsThreads, 0));
    kernel<<<grid, kWideStatsThreads, 0, stream>>>(
        a.dy, a.x, a.mean, a.rstd, a.weight, row_stats.mutable_data_ptr<acc_t>(), a.rows, a.cols);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  auto kernel = norm_bwd_columns_kernel<T, W, kVec>;
  const int64_t num_packs = a.cols / kVec;
  const int64_t strips = (num_packs + kColumnsThreads - 1) / kColumnsThreads;
  // Enough row chunks to fill the GPU twice over, each chunk at least 8 rows.
  const int64_t want_chunks = (2 * resident_blocks(kernel, kColumnsThreads, 0) + strips - 1) / strips;
  const int64_t chunks = std::max<int64_t>(1, std::min(want_chunks, (a.rows + 7) / 8));
  const int64_t rows_per_chunk = (a.rows + chunks - 1) / chunks;
  const int64_t used_chunks = (a.rows + rows_per_chunk - 1) / rows_per_chunk;
  at::Tensor dw_part = a.dweight != nullptr ? at::empty({used_chunks, a.cols}, a.acc_options) : at::Tensor();
  at::Tensor db_part = a.dbias != nullptr ? at::empty({used_chunks, a.cols}, a.acc_options) : at::Tensor();
  TORCH_CHECK(used_chunks <= 65535, "reference_ops: too many rows (", a.rows, ") for the wide-row backward");
  const dim3 grid(static_cast<unsigned>(strips), static_cast<unsigned>(used_chunks));
  kernel<<<grid, kColumnsThreads, 0, stream>>>(
      a.dy, a.x, a.mean, a.rstd, a.weight, row_stats.const_data_ptr<acc_t>(), a.dx,
      data_or_null<acc_t>(dw_part), data_or_null<acc_t>(db_part), a.rows, a.cols, rows_per_chunk);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  if (a.dweight != nullptr || a.dbias != nullptr) {
    launch_column_sums(a, dw_part, db_part, used_chunks);
  }
}

template <typename T, typename W, int kVec>
void launch_norm_bwd(const BwdArgs<T, W>& a) {
  using acc_t = at::opmath_type<T>;
  constexpr int kMaxPacks = std::max<int>(1, std::min<int>(8, kMaxBwdAccBytes / sizeof(acc_t) / kVec));
  const RowConfig cfg = choose_row_config(a.cols / kVec, kMaxPacks, kBwdThreads);
  if (cfg.packs_per_thread > kMaxPacks) {
    launch_norm_bwd_wide<T, W, kVec>(a);
    return;
  }
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  packs_switch(cfg.packs_per_thread, [&](auto packs) {
    constexpr int kPacks = decltype(packs)::value;
    if constexpr (kPacks <= kMaxPacks) {
      auto kernel = norm_bwd_kernel<T, W, kVec, kPacks>;
      const int64_t groups = kBwdThreads / cfg.threads_per_row;
      const int64_t grid = std::min((a.rows + groups - 1) / groups, resident_blocks(kernel, kBwdThreads, 0));
      at::Tensor dw_part = a.dweight != nullptr ? at::empty({grid, a.cols}, a.acc_options) : at::Tensor();
      at::Tensor db_part = a.dbias != nullptr ? at::empty({grid, a.cols}, a.acc_options) : at::Tensor();
      kernel<<<grid, kBwdThreads, 0, stream>>>(
          a.dy, a.x, a.mean, a.rstd, a.weight, a.dx, data_or_null<acc_t>(dw_part), data_or_null<acc_t>(db_part),
          a.rows, a.cols, cfg.threads_per_row);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
      if (a.dweight != nullptr || a.dbias != nullptr) {
        launch_column_sums(a, dw_part, db_part, grid);
      }
    } else {
      TORCH_CHECK(false, "reference_ops: internal error, backward packs per thread ", kPacks);
    }
  });
}

// The one place that picks a kernel: 16-byte packs when the row width and
// every pointer allow them, else single elements; then by row width.
template <typename T, typename W>
void dispatch_norm_bwd(const BwdArgs<T, W>& a) {
  constexpr int kVec = kPackBytes / sizeof(T);
  const bool vectorised = a.cols % kVec == 0 && is_aligned(a.x, kPackBytes) && is_aligned(a.dy, kPackBytes) &&
      is_aligned(a.dx, kPackBytes) && is_aligned(a.weight, sizeof(W) * kVec);
  if (vectorised) {
    launch_norm_bwd<T, W, kVec>(a);
  } else {
    launch_norm_bwd<T, W, 1>(a);
  }
}

// -----------------------------------------------------------------------------
// Typed implementation and dtype dispatch
// -----------------------------------------------------------------------------

template <typename T, typename W>
void norm_bwd_typed(
    const at::Tensor& dy,
    const at::Tensor& x,
    const at::Tensor& mean,
    const at::Tensor& rstd,
    const at::Tensor& weight,
    at::Tensor& dx,
    at::Tensor& dweight,
    at::Tensor& dbias,
    NormShape shape) {
  using acc_t = at::opmath_type<T>;
  BwdArgs<T, W> a{
      dy.const_data_ptr<T>(),
      x.const_data_ptr<T>(),
      mean.defined() ? mean.const_data_ptr<acc_t>() : nullptr,
      rstd.const_data_ptr<acc_t>(),
      weight.defined() ? weight.const_data_ptr<W>() : nullptr,
      dx.mutable_data_ptr<T>(),
      dweight.defined() ? dweight.mutable_data_ptr<W>() : nullptr,
      dbias.defined() ? dbias.mutable_data_ptr<W>() : nullptr,
      shape.rows,
      shape.cols,
      x.options().dtype(c10::CppTypeToScalarType<acc_t>::value)};
  dispatch_norm_bwd<T, W>(a);
}

void norm_bwd_cuda(
    const at::Tensor& dy,
    const at::Tensor& x,
    const at::Tensor& mean,
    const at::Tensor& rstd,
    const at::Tensor& weight,
    at::Tensor& dx,
    at::Tensor& dweight,
    at::Tensor& dbias,
    NormShape shape) {
  if (shape.rows == 0) {
    if (dweight.defined()) {
      dweight.zero_();
    }
    if (dbias.defined()) {
      dbias.zero_();
    }
    return;
  }
  dispatch_types(x.scalar_type(), has_float_params(x, dweight, dbias), [&](auto t, auto w) {
    norm_bwd_typed<decltype(t), decltype(w)>(dy, x, mean, rstd, weight, dx, dweight, dbias, shape);
  });
}

} // namespace
} // namespace cuda

// The shared entry points of norm.cpp with the CUDA backend.
TORCH_LIBRARY_IMPL(reference_ops, CUDA, m) {
  m.impl("layer_norm_bwd", [](const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean, const at::Tensor& rstd,
                              c10::IntArrayRef shape, const std::optional<at::Tensor>& w,
                              const std::optional<at::Tensor>& b) {
    return layer_norm_bwd(dy, x, mean, rstd, shape, w, b, cuda::norm_bwd_cuda);
  });
  m.impl("rms_norm_bwd", [](const at::Tensor& dy, const at::Tensor& x, const at::Tensor& rstd, c10::IntArrayRef shape,
                            const std::optional<at::Tensor>& w) {
    return rms_norm_bwd(dy, x, rstd, shape, w, cuda::norm_bwd_cuda);
  });
}

} // namespace reference_ops
