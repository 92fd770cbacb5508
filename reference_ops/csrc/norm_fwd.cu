// CUDA forward kernels of reference_ops::layer_norm_fwd and
// reference_ops::rms_norm_fwd.
//
// One kernel family serves both ops (RMSNorm is LayerNorm without centring and
// bias), chosen in dispatch_norm_fwd:
//   * norm_fwd_staged_kernel (16-byte-aligned rows): persistent CTAs stream
//     rows into shared memory with cp.async a few rows ahead; each thread keeps
//     its packs in registers for the exact two-pass statistics
//     (mean = sum(x)/N, var = sum((x-mean)^2)/N) and the output. Rows wider
//     than one CTA holds are split over a thread-block cluster (sm_90).
//   * norm_fwd_kernel / norm_fwd_uncached_kernel: single elements (odd N or
//     unaligned pointers), and aligned rows too wide to stage (or clusters
//     unavailable): the row in registers, or read twice with shifted sums
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

// Staged kernel: rows staged per row group (one being normalised, the others in
// flight); wide rows are split over a cluster until kFwdMinStages fit.
constexpr int kFwdMinStages = 2;
constexpr int kFwdMaxStages = 3;
// Threads of a staged CTA (at most; narrow rows share one).
constexpr int kFwdThreads = 512;
// Bytes of a row a thread keeps in registers (as acc_t: 32 floats); wider
// slices take more threads, then a cluster.
constexpr int kFwdRegisterBytes = 128;

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


// Staged forward (16-byte packs): a persistent grid; each row group of
// threads_per_row threads works on `stages` rows at once, one being normalised
// while the next ones are copied into shared memory by cp.async (each thread
// copies and later reads only its own packs, so the copies need no barrier).
// A thread reads its kPacks packs once and keeps them in registers for the
// exact two-pass statistics and the output. Rows too wide for one CTA are split
// over a cluster of CTAs: each computes its slice's statistics, and one exchange
// through distributed shared memory combines them. Weight and bias are staged once.
template <typename T, typename W, int kPacks, bool kRms>
__global__ void __launch_bounds__(kFwdThreads, 1) norm_fwd_staged_kernel(
    const T* __restrict__ x,
    const W* __restrict__ weight,
    const W* __restrict__ bias,
    T* __restrict__ y,
    at::opmath_type<T>* __restrict__ mean_out,
    at::opmath_type<T>* __restrict__ rstd_out,
    int64_t rows,
    int64_t cols,
    int threads_per_row,
    int cluster,
    int stages,
    int64_t slice_packs,
    at::opmath_type<T> eps) {
  using acc_t = at::opmath_type<T>;
  constexpr int kVec = kPackBytes / sizeof(T);
  using XPack = Pack<T, kVec>;
  using WPack = Pack<W, kVec>;
  __shared__ ReduceScratch<acc_t, 1> scratch;
  __shared__ acc_t combine[2][2];  // this CTA's (mean, squared deviations) of a row, by row parity
  const int groups = blockDim.x / threads_per_row;
  const int group = threadIdx.x / threads_per_row;
  const int lane = threadIdx.x & (threads_per_row - 1);
  const int64_t rank = cluster_rank();
  const int64_t cluster_id = blockIdx.x / cluster;
  const int64_t clusters = gridDim.x / cluster;
  const int64_t pack0 = rank * slice_packs;
  // In-slice pack indices fit in int: a slice is at most kFwdThreads * kPacks packs.
  const int packs = static_cast<int>(
      slice_packs < cols / kVec - pack0 ? slice_packs : (pack0 < cols / kVec ? cols / kVec - pack0 : 0));
  const acc_t inv_cols = acc_t(1) / static_cast<acc_t>(cols);

  // Shared memory: weight and bias slices, then [stages][groups][slice_packs] staged x.
  WPack* w_s = reinterpret_cast<WPack*>(dynamic_smem());
  WPack* b_s = w_s + (weight != nullptr ? slice_packs : 0);
  XPack* stage = reinterpret_cast<XPack*>(b_s + (bias != nullptr ? slice_packs : 0));
  for (int j = threadIdx.x; j < packs; j += blockDim.x) {
    if (weight != nullptr) {
      w_s[j] = load_pack<W, kVec>(weight, pack0 + j);
    }
    if (bias != nullptr) {
      b_s[j] = load_pack<W, kVec>(bias, pack0 + j);
    }
  }
  __syncthreads();

  // Iteration k of this CTA handles row first_row + k * row_step + group.
  const int64_t first_row = cluster_id * groups;
  const int64_t row_step = clusters * groups;
  const int64_t iters = first_row < rows ? (rows - first_row + row_step - 1) / row_step : 0;
  auto staged = [&](int64_t k) { return stage + ((k % stages) * groups + group) * slice_packs; };
  auto issue = [&](int64_t k) {
    const int64_t row = first_row + k * row_step + group;
    const bool ok = row < rows;
    const XPack* src = reinterpret_cast<const XPack*>(x + (ok ? row : 0) * cols) + pack0;
    XPack* dst = staged(k);
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      const int j = lane + p * threads_per_row;
      if (j < packs) {
        cp_async_16(dst + j, src + j, ok);
      }
    }
  };
  for (int64_t k = 0; k < stages - 1; ++k) {
    if (k < iters) {
      issue(k);
    }
    cp_async_commit();
  }

  int slot = 0;
  for (int64_t k = 0; k < iters; ++k) {
    if (k + stages - 1 < iters) {
      issue(k + stages - 1);
    }
    // One group per iteration, empty or not, so "all but stages - 1" always means row k.
    cp_async_commit();
    cp_async_wait(stages - 1);
    const XPack* xs = staged(k);

    XPack xp[kPacks];
    acc_t sum[1] = {acc_t(0)};
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      const int j = lane + p * threads_per_row;
      if (j < packs) {
        xp[p] = xs[j];
      } else {
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          xp[p].v[e] = T(0);
        }
      }
      if constexpr (!kRms) {
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          sum[0] += static_cast<acc_t>(xp[p].v[e]);
        }
      }
    }
    // Exact two-pass statistics over the row group (a CTA's slice when clustered).
    acc_t mean = acc_t(0);
    if constexpr (!kRms) {
      row_reduce(sum, threads_per_row, 1, scratch, slot);
      mean = sum[0] / static_cast<acc_t>(cluster == 1 ? cols : packs * kVec > 0 ? packs * kVec : 1);
    }
    acc_t sq[1] = {acc_t(0)};
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      const int j = lane + p * threads_per_row;
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        const acc_t d = j < packs ? static_cast<acc_t>(xp[p].v[e]) - mean : acc_t(0);
        sq[0] += d * d;
      }
    }
    row_reduce(sq, threads_per_row, 1, scratch, slot);
    if (cluster > 1) {
      // One exchange per row across the cluster: the slices' (mean, sum of squared
      // deviations) pairs, combined in rank order (Chan, Golub & LeVeque 1979).
      if (threadIdx.x == 0) {
        combine[k & 1][0] = mean;
        combine[k & 1][1] = sq[0];
      }
      cluster_or_block_sync(cluster);
      auto slice_count = [&](int r) {
        const int64_t first = r * slice_packs;
        const int64_t left = first < cols / kVec ? cols / kVec - first : 0;
        return static_cast<acc_t>((left < slice_packs ? left : slice_packs) * kVec);
      };
      acc_t total = acc_t(0);
      acc_t m2 = acc_t(0);
      for (int r = 0; r < cluster; ++r) {
        const acc_t(*peer)[2] = cluster_peer(combine, cluster, r);
        total += peer[k & 1][0] * slice_count(r);
        m2 += peer[k & 1][1];
      }
      mean = total * inv_cols;
      for (int r = 0; r < cluster; ++r) {
        const acc_t d = cluster_peer(combine, cluster, r)[k & 1][0] - mean;
        m2 += slice_count(r) * d * d;
      }
      sq[0] = m2;
    }
    const acc_t rstd = rsqrt_acc(sq[0] * inv_cols + eps);

    const int64_t row = first_row + k * row_step + group;
    if (row < rows) {
      if (lane == 0 && rank == 0) {
        if constexpr (!kRms) {
          mean_out[row] = mean;
        }
        rstd_out[row] = rstd;
      }
      T* yr = y + row * cols;
#pragma unroll
      for (int p = 0; p < kPacks; ++p) {
        const int j = lane + p * threads_per_row;
        if (j < packs) {
          WPack wp;
          WPack bp;
          if (weight != nullptr) {
            wp = w_s[j];
          }
          if (bias != nullptr) {
            bp = b_s[j];
          }
          XPack out;
#pragma unroll
          for (int e = 0; e < kVec; ++e) {
            const acc_t t = (static_cast<acc_t>(xp[p].v[e]) - mean) * rstd;
            const acc_t wv = weight != nullptr ? static_cast<acc_t>(wp.v[e]) : acc_t(1);
            const acc_t bv = bias != nullptr ? static_cast<acc_t>(bp.v[e]) : acc_t(0);
            out.v[e] = static_cast<T>(t * wv + bv);
          }
          store_pack<T, kVec>(yr, pack0 + j, out);
        }
      }
    }
  }
  // A CTA leaves only once no peer can still read its reduction scratch.
  if (cluster > 1) {
    cluster_or_block_sync(cluster);
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

// Launch shape of the staged kernel, or false when a row slice does not fit in
// shared memory even split over the largest cluster (then the register kernels run).
template <typename T, typename W>
bool staged_fwd_config(const FwdArgs<T, W>& a, StagedConfig& c, int& packs) {
  using acc_t = at::opmath_type<T>;
  constexpr int kVec = kPackBytes / sizeof(T);
  constexpr int64_t kMaxPacks = kFwdRegisterBytes / sizeof(acc_t) / kVec;
  const int64_t num_packs = a.cols / kVec;
  const int64_t params = (a.weight != nullptr ? 1 : 0) + (a.bias != nullptr ? 1 : 0);
  const int64_t param_pack_bytes = params * static_cast<int64_t>(sizeof(Pack<W, kVec>));
  const int64_t budget = static_cast<int64_t>(smem_budget());
  const int max_cluster = max_cluster_size();
  const int64_t per_pack = kFwdMinStages * kPackBytes + param_pack_bytes;
  auto fits = [&](int cluster) {
    const int64_t slice = ceil_div(num_packs, cluster);
    return slice <= kFwdThreads * kMaxPacks && slice * per_pack <= budget;
  };
  c.cluster = 1;
  while (c.cluster < max_cluster && !fits(c.cluster)) {
    c.cluster *= 2;
  }
  if (!fits(c.cluster)) {
    return false;
  }
  c.slice_packs = ceil_div(num_packs, c.cluster);
  // Rows split over a cluster need whole warps per row.
  const int64_t min_threads = c.cluster > 1 ? 32 : 1;
  c.threads_per_row = static_cast<int>(
      std::min<int64_t>(kFwdThreads, std::max(min_threads, next_pow2(ceil_div(c.slice_packs, kMaxPacks)))));
  packs = static_cast<int>(next_pow2(ceil_div(c.slice_packs, c.threads_per_row)));
  c.groups = c.cluster == 1 ? kFwdThreads / c.threads_per_row : 1;
  const int64_t param_bytes = c.slice_packs * param_pack_bytes;
  const int64_t stage_bytes = c.groups * c.slice_packs * kPackBytes;
  c.stages = static_cast<int>(std::clamp<int64_t>((budget - param_bytes) / stage_bytes, 1, kFwdMaxStages));
  c.smem_bytes = static_cast<size_t>(param_bytes + c.stages * stage_bytes);
  return true;
}

// The one place that picks a kernel: with 16-byte packs (row width and every
// pointer allow them) the staged kernel, else the register kernels with single
// elements; the register kernels also take rows too wide to stage.
template <typename T, typename W>
void dispatch_norm_fwd(const FwdArgs<T, W>& a) {
  constexpr int kVec = kPackBytes / sizeof(T);
  const bool vectorised = a.cols % kVec == 0 && is_aligned(a.x, kPackBytes) && is_aligned(a.y, kPackBytes) &&
      is_aligned(a.weight, sizeof(W) * kVec) && is_aligned(a.bias, sizeof(W) * kVec);
  if (!vectorised) {
    launch_norm_fwd<T, W, 1>(a);
    return;
  }
  StagedConfig c;
  int packs = 1;
  if (!staged_fwd_config(a, c, packs)) {
    launch_norm_fwd<T, W, kVec>(a);
    return;
  }
  packs_switch(packs, [&](auto p) {
    constexpr int kPacks = decltype(p)::value;
    if constexpr (kPacks * kVec * sizeof(at::opmath_type<T>) <= kFwdRegisterBytes) {
      BOOL_SWITCH(a.rms, kRms, [&] {
        auto kernel = norm_fwd_staged_kernel<T, W, kPacks, kRms>;
        const int64_t clusters = std::min(ceil_div(a.rows, c.groups), resident_clusters(kernel, c));
        launch_staged(kernel, c, clusters, a.x, a.weight, a.bias, a.y, a.mean, a.rstd, a.rows, a.cols,
                      c.threads_per_row, c.cluster, c.stages, c.slice_packs, a.eps);
      });
    } else {
      TORCH_CHECK(false, "reference_ops: internal error, staged forward packs per thread ", kPacks);
    }
  });
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
