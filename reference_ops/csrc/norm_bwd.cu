// CUDA backward kernels of reference_ops::layer_norm_bwd and
// reference_ops::rms_norm_bwd.
//
// With xhat = (x - mean) * rstd and g = dy * weight (mean = 0 for RMSNorm):
//   dx      = rstd * (g - mean(g) - xhat * mean(g * xhat))   (RMSNorm: no
//   mean(g) term) dweight = sum over rows of dy * xhat,  dbias = sum over rows
//   of dy.
// No floating-point atomics: every block writes its partial dweight / dbias row
// to a workspace and column_sum_kernel adds the partial rows in a fixed order,
// so results are bitwise reproducible.
//
// The variants (BwdVariant), chosen by plan_bwd (norm_plan.cpp) and launched in
// dispatch_norm_bwd:
//   * norm_bwd_few_rows_kernel (few rows, 16-byte packs): blocks that write dx
//     and blocks that add dweight / dbias over all rows, in one launch.
//   * norm_bwd_staged_kernel (16-byte-aligned pointers; for N not a multiple of
//     the pack, the packs of the tensor that cover each row): persistent CTAs
//     stream x, dy and the statistics of the next rows into shared memory with
//     cp.async; each thread owns the same columns in every row, so its
//     dweight / dbias accumulate in registers; rows too wide for one CTA (or
//     too few per SM) are split over a thread-block cluster (sm_90). One pass
//     over x and dy.
//   * norm_bwd_kernel: the same without staging, for unaligned pointers (single
//     elements) and rows the staged kernel cannot hold.
//   * wide rows (more than kMaxBwdAccBytes of accumulators per thread) that
//     the staged kernel cannot take: norm_bwd_row_stats_kernel computes
//     mean(g) and mean(g * xhat) per row, then norm_bwd_columns_kernel walks
//     column strips over chunks of rows, writing dx and per-chunk partials.
//     Two passes over x and dy.

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>

#include <utility>

#include "launch.cuh"
#include "norm.h"
#include "norm_plan.h"
#include "pack.cuh"
#include "reduce.cuh"

namespace reference_ops {
namespace cuda {
namespace {

// The limits shared with the planner (kBwdThreads, the staging and few-row constants, ...) are
// in norm_plan.h.

// The shifts a span of scalar_t can have.
template <typename scalar_t>
constexpr int kSpanShifts = span_shifts(sizeof(scalar_t));

// -----------------------------------------------------------------------------
// Device helpers
// -----------------------------------------------------------------------------

template <typename scalar_t, int kVec>
__device__ __forceinline__ void zero_pack(Pack<scalar_t, kVec>& p) {
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    p.v[k] = scalar_t(0);
  }
}

// -----------------------------------------------------------------------------
// Kernels
// -----------------------------------------------------------------------------

template <typename scalar_t, typename weight_t, int kVec, int kPacks>
__global__ void __launch_bounds__(kBwdThreads, 1)
    norm_bwd_kernel(const scalar_t* __restrict__ dy, const scalar_t* __restrict__ x,
                    const at::opmath_type<scalar_t>* __restrict__ mean,
                    const at::opmath_type<scalar_t>* __restrict__ rstd, const weight_t* __restrict__ weight,
                    scalar_t* __restrict__ dx, at::opmath_type<scalar_t>* __restrict__ dw_part,
                    at::opmath_type<scalar_t>* __restrict__ db_part, int64_t rows, int64_t cols, int threads_per_row) {
  using acc_t = at::opmath_type<scalar_t>;
  constexpr int kElems = kPacks * kVec;
  __shared__ acc_t scratch[64];
  __shared__ alignas(alignof(Pack<acc_t, kVec>)) acc_t group_partials[kMaxBwdAccBytes / sizeof(acc_t) * kBwdThreads];
  const int lane = threadIdx.x & (threads_per_row - 1);
  const int group = threadIdx.x >> log2_pow2(threads_per_row);
  const int groups = blockDim.x >> log2_pow2(threads_per_row);
  const int64_t num_packs = cols / kVec;
  const acc_t inv_cols = acc_t(1) / static_cast<acc_t>(cols);

  // The thread's columns are the same for every row: load weight once.
  acc_t w[kElems];
#pragma unroll
  for (int p = 0; p < kPacks; ++p) {
    const int64_t idx = lane + static_cast<int64_t>(p) * threads_per_row;
    Pack<weight_t, kVec> wp;
    if (weight != nullptr && idx < num_packs) {
      wp = load_pack<weight_t, kVec>(weight, idx);
    } else {
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        wp.v[k] = weight_t(1);
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
    Pack<scalar_t, kVec> xp[kPacks];
    Pack<scalar_t, kVec> gp[kPacks];
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      const int64_t idx = lane + static_cast<int64_t>(p) * threads_per_row;
      if (row_ok && idx < num_packs) {
        xp[p] = load_pack<scalar_t, kVec>(x + row * cols, idx);
        gp[p] = load_pack<scalar_t, kVec>(dy + row * cols, idx);
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
          Pack<scalar_t, kVec> dp;
#pragma unroll
          for (int k = 0; k < kVec; ++k) {
            const acc_t xhat = (static_cast<acc_t>(xp[p].v[k]) - m) * r;
            const acc_t d = static_cast<acc_t>(gp[p].v[k]);
            dp.v[k] = static_cast<scalar_t>(r * (d * w[p * kVec + k] - mean_g - xhat * mean_gx));
            dw_acc[p * kVec + k] += d * xhat;
            db_acc[p * kVec + k] += d;
          }
          store_pack<scalar_t, kVec>(dx + row * cols, idx, dp);
        }
      }
    }
  }

  // One partial row per block: its row groups' sums added in a fixed order (dweight's, then
  // dbias', through the one staging buffer).
  const int64_t row = static_cast<int64_t>(blockIdx.x) * cols;
  acc_t* const dw_row[1] = {dw_part != nullptr ? dw_part + row : nullptr};
  acc_t* const db_row[1] = {db_part != nullptr ? db_part + row : nullptr};
  write_cta_column_sums<1, kPacks, kVec>(dw_row, group_partials, lane, group, groups, threads_per_row, num_packs,
                                         [&](int, int p, int e) { return dw_acc[p * kVec + e]; });
  write_cta_column_sums<1, kPacks, kVec>(db_row, group_partials, lane, group, groups, threads_per_row, num_packs,
                                         [&](int, int p, int e) { return db_acc[p * kVec + e]; });
}

template <typename scalar_t, typename weight_t, int kVec>
__global__ void __launch_bounds__(kWideStatsThreads, 1)
    norm_bwd_row_stats_kernel(const scalar_t* __restrict__ dy, const scalar_t* __restrict__ x,
                              const at::opmath_type<scalar_t>* __restrict__ mean,
                              const at::opmath_type<scalar_t>* __restrict__ rstd, const weight_t* __restrict__ weight,
                              at::opmath_type<scalar_t>* __restrict__ row_stats, int64_t rows, int64_t cols) {
  using acc_t = at::opmath_type<scalar_t>;
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
      const Pack<scalar_t, kVec> xp = load_pack<scalar_t, kVec>(x + row * cols, idx);
      const Pack<scalar_t, kVec> gp = load_pack<scalar_t, kVec>(dy + row * cols, idx);
      Pack<weight_t, kVec> wp;
      if (weight != nullptr) {
        wp = load_pack<weight_t, kVec>(weight, idx);
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

template <typename scalar_t, typename weight_t, int kVec>
__global__ void __launch_bounds__(kColumnsThreads)
    norm_bwd_columns_kernel(const scalar_t* __restrict__ dy, const scalar_t* __restrict__ x,
                            const at::opmath_type<scalar_t>* __restrict__ mean,
                            const at::opmath_type<scalar_t>* __restrict__ rstd, const weight_t* __restrict__ weight,
                            const at::opmath_type<scalar_t>* __restrict__ row_stats, scalar_t* __restrict__ dx,
                            at::opmath_type<scalar_t>* __restrict__ dw_part,
                            at::opmath_type<scalar_t>* __restrict__ db_part, int64_t rows, int64_t cols,
                            int64_t rows_per_chunk) {
  using acc_t = at::opmath_type<scalar_t>;
  const int64_t num_packs = cols / kVec;
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= num_packs) {
    return;
  }
  acc_t w[kVec];
  Pack<weight_t, kVec> wp;
  if (weight != nullptr) {
    wp = load_pack<weight_t, kVec>(weight, idx);
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
    const Pack<scalar_t, kVec> xp = load_pack<scalar_t, kVec>(x + row * cols, idx);
    const Pack<scalar_t, kVec> gp = load_pack<scalar_t, kVec>(dy + row * cols, idx);
    const acc_t m = mean != nullptr ? mean[row] : acc_t(0);
    const acc_t r = rstd[row];
    const acc_t mean_g = row_stats[2 * row];
    const acc_t mean_gx = row_stats[2 * row + 1];
    Pack<scalar_t, kVec> dp;
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      const acc_t xhat = (static_cast<acc_t>(xp.v[k]) - m) * r;
      const acc_t d = static_cast<acc_t>(gp.v[k]);
      dp.v[k] = static_cast<scalar_t>(r * (d * w[k] - mean_g - xhat * mean_gx));
      dw_acc[k] += d * xhat;
      db_acc[k] += d;
    }
    store_pack<scalar_t, kVec>(dx + row * cols, idx, dp);
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

// The staged kernel's column partial sums: the row groups of a CTA added in a fixed order through
// the (idle) staging memory sums_s ([groups][slice_cols]), written as the CTA's columns of
// dweight / dbias (`finals`, one cluster) or of its partial rows (`parts`). acc(which, p, e) is the
// thread's accumulator of element e of slot p, column0(j) the column of element 0 of pack j.
template <int kVec, int kSlots, bool kSpan, bool kRms, typename acc_t, typename weight_t, typename Acc,
          typename Column0>
__device__ __forceinline__ void staged_column_sums(acc_t* sums_s, int slice_cols, int col_begin, int packs, int lane,
                                                   int threads_per_row, int group, int groups, int64_t cluster_id,
                                                   int64_t cols, acc_t* const (&parts)[2], weight_t* const (&finals)[2],
                                                   Acc&& acc, Column0&& column0) {
#pragma unroll
  for (int which = 0; which < (kRms ? 1 : 2); ++which) {
    if (parts[which] == nullptr && finals[which] == nullptr) {
      continue;
    }
    __syncthreads();
#pragma unroll
    for (int p = 0; p < kSlots; ++p) {
      const int j = lane + p * threads_per_row;
      if (j < packs) {
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          // Aligned rows: the plain index, which the compiler turns into 16-byte stores.
          const int col = kSpan ? column0(j) + e - col_begin : j * kVec + e;
          if (!kSpan || (col >= 0 && col < slice_cols)) {
            sums_s[group * slice_cols + col] = acc(which, p, e);
          }
        }
      }
    }
    __syncthreads();
    for (int c = threadIdx.x; c < slice_cols; c += blockDim.x) {
      acc_t total = acc_t(0);
      for (int g = 0; g < groups; ++g) {
        total += sums_s[g * slice_cols + c];
      }
      const int64_t col = col_begin + c;
      if (finals[which] != nullptr) {
        finals[which][col] = static_cast<weight_t>(total);
      } else {
        parts[which][cluster_id * cols + col] = total;
      }
    }
  }
}

// A thread of the staged kernel: its lane in its row group of threads_per_row threads, its CTA's
// slice of the row (packs pack0 .. pack0 + packs of the row's span; a staged row holds slice_packs
// of x, then as many of dy) and the row's width. Slot p of the thread is pack lane + p *
// threads_per_row of the slice, the same columns in every row.
template <int kVec, bool kSpan>
struct StagedSlice {
  int lane;
  int threads_per_row;
  int pack0;
  int packs;
  int64_t slice_packs;
  RowSpan span;
  int64_t cols;

  // Column of element 0 of pack j of the slice.
  __device__ __forceinline__ int column0(int j) const { return (pack0 + j) * kVec - span.shift; }
  // A span's first and last packs are its edges, which hold elements of the neighbouring rows.
  __device__ __forceinline__ bool edge(int j) const { return kSpan && (column0(j) < 0 || column0(j) + kVec > cols); }
  // x and dy of pack j of a staged row (edge packs: the neighbouring rows' elements zeroed).
  template <typename P>
  __device__ __forceinline__ void read(const P* xs, int j, P& xp, P& gp) const {
    xp = xs[j];
    gp = xs[slice_packs + j];
    if (edge(j)) {
      xp.keep(-column0(j), cols - column0(j));
      gp.keep(-column0(j), cols - column0(j));
    }
  }
};

// Load: the row's slice of x and dy into its row group's staging slot (slot(): [x][dy],
// slice_packs each), and the row's statistics into stats_slot(), by cp.async, so that they arrive
// while earlier rows are worked on. Each thread copies the packs it later reads, and the first
// thread of each segment (the row group's threads within one warp) the statistics that segment
// reads. A row past the end copies zeros (every thread still commits its group of copies).
template <bool kRms, typename scalar_t, int kVec, bool kSpan, typename acc_t, typename FirstPack, typename Slot,
          typename StatsSlot>
__device__ __forceinline__ void staged_load_row(const StagedSlice<kVec, kSpan>& s, const scalar_t* x,
                                                const scalar_t* dy, const acc_t* mean, const acc_t* rstd, int64_t row,
                                                int64_t rows, FirstPack&& first_pack, Slot&& slot,
                                                StatsSlot&& stats_slot, int segment_threads) {
  using XPack = RawPack<scalar_t, kVec>;
  const bool ok = row < rows;
  const int64_t first = first_pack(ok ? row : 0) + s.pack0;
  const XPack* xr = reinterpret_cast<const XPack*>(x) + first;
  const XPack* gr = reinterpret_cast<const XPack*>(dy) + first;
  XPack* dst = slot();
  // The tensor's last pack, when it runs past the tensor's end, is copied one element at a time
  // (cp.async reads all 16 bytes even when told to copy fewer).
  const TailPack tail = kSpan && ok ? tail_pack<kVec>(first, s.packs, rows * s.cols) : TailPack{-1, 0};
  for (int j = s.lane; j < s.packs; j += s.threads_per_row) {
    if (kSpan && j == tail.index) {
      dst[j].load_elems(reinterpret_cast<const scalar_t*>(xr + j), tail.elems);
      dst[s.slice_packs + j].load_elems(reinterpret_cast<const scalar_t*>(gr + j), tail.elems);
    } else {
      cp_async_16(dst + j, xr + j, ok ? kPackBytes : 0);
      cp_async_16(dst + s.slice_packs + j, gr + j, ok ? kPackBytes : 0);
    }
  }
  if (threadIdx.x % segment_threads == 0) {
    acc_t* st = stats_slot();
    if (!kRms) {
      cp_async_small<sizeof(acc_t)>(st, mean + (ok ? row : 0), ok);
    }
    cp_async_small<sizeof(acc_t)>(st + 1, rstd + (ok ? row : 0), ok);
  }
}

// Staged backward (16-byte packs): a persistent grid; each row group of threads_per_row threads
// works on `stages` rows at once, one being processed while x, dy and the row statistics of the
// next ones are copied into shared memory (staged_load_row). Every thread owns the same kPacks
// packs of columns in every row (StagedSlice), so its dweight / dbias columns accumulate in
// registers. Rows too wide for one CTA are split over a cluster whose row sums meet through
// distributed shared memory; clusters also cut the number of partial rows when there are few rows
// per SM. At the end the row groups of a CTA are added in a fixed order and written as the CTA's
// partial row, or as dweight / dbias themselves when the grid is one cluster
// (staged_column_sums). RMSNorm: no mean and no dbias, known at compile time (the sum of g,
// x - mean and the dbias accumulators drop out).
template <typename scalar_t, typename weight_t, int kPacks, RowLayout kLayout, Norm kNorm>
__global__ void __launch_bounds__(kBwdThreads, 1)
    norm_bwd_staged_kernel(const scalar_t* __restrict__ dy, const scalar_t* __restrict__ x,
                           const at::opmath_type<scalar_t>* __restrict__ mean,
                           const at::opmath_type<scalar_t>* __restrict__ rstd, const weight_t* __restrict__ weight,
                           scalar_t* __restrict__ dx, at::opmath_type<scalar_t>* __restrict__ dw_part,
                           at::opmath_type<scalar_t>* __restrict__ db_part, weight_t* __restrict__ dweight,
                           weight_t* __restrict__ dbias, int64_t rows, int64_t cols, int threads_per_row, int cluster,
                           int stages, int64_t slice_packs) {
  using acc_t = at::opmath_type<scalar_t>;
  constexpr bool kSpan = kLayout == RowLayout::kSpan;
  constexpr bool kRms = kNorm == Norm::kRms;
  constexpr int kVec = kPackBytes / sizeof(scalar_t);
  constexpr int kElems = kPacks * kVec;
  // kSpan: a span's packs beyond the aligned width (kSpanExtraPacks at most)
  // take one more slot (its first lanes), whose dweight / dbias accumulate in
  // shared memory, so a span row is spread over threads like an aligned row of
  // its width.
  constexpr int kSlots = kPacks + (kSpan ? 1 : 0);
  constexpr int kShifts = kSpanShifts<scalar_t>;
  using XPack = RawPack<scalar_t, kVec>;
  using WPack = RawPack<weight_t, kVec>;
  // Row sums: sum(g) (LayerNorm) and sum(g * (x - mean)).
  constexpr int kSums = kRms ? 1 : 2;
  __shared__ ReduceScratch<acc_t, kSums, kMaxClusterSize * kBwdThreads / kWarpSize> scratch;
  const int groups = blockDim.x >> log2_pow2(threads_per_row);
  const int group = threadIdx.x >> log2_pow2(threads_per_row);
  const int lane = threadIdx.x & (threads_per_row - 1);
  const int64_t rank = cluster_rank();
  const int64_t cluster_id = blockIdx.x / cluster;
  const int64_t clusters = gridDim.x / cluster;
  const int64_t first_row = cluster_id * groups;
  const int64_t row_step = clusters * groups;
  // kSpan: the row step is a multiple of kShifts (or each group has one row),
  // so every row of a group starts at the same offset in its first pack pair
  // and each thread keeps the same columns: shift and packs are the group's.
  const RowSpan span = kSpan ? row_span<kVec, kSpanAlignPacks>(first_row + group < rows ? first_row + group : 0, cols)
                             : RowSpan{0, 0, static_cast<int>(cols / kVec)};
  // The first pack of a row's span (of the row, for aligned rows).
  auto first_pack = [&](int64_t row) { return kSpan ? row * cols / kShifts * kSpanAlignPacks : row * cols / kVec; };
  // Indices within a slice are 32-bit (a slice fits in shared memory).
  const int pack0 = static_cast<int>(rank * slice_packs);
  const int packs = max(min(static_cast<int>(slice_packs), span.packs - pack0), 0);
  const StagedSlice<kVec, kSpan> s{lane, threads_per_row, pack0, packs, slice_packs, span, cols};
  // The columns this CTA owns.
  const int col_begin = max(s.column0(0), 0);
  const int col_end = static_cast<int>(std::min<int64_t>(s.column0(packs), cols));
  const acc_t inv_cols = acc_t(1) / static_cast<acc_t>(cols);

  // The statistics of a row are copied once per segment (the threads of one row
  // group within one warp) by its first thread, and read by that segment alone.
  const int segment_threads = threads_per_row < kWarpSize ? threads_per_row : kWarpSize;
  const int segments = blockDim.x / segment_threads;
  const int segment = threadIdx.x / segment_threads;

  // Shared memory: the weight slice (kSpan: one per row group, shifted to its
  // columns, zero outside the row), ones without weight; kSpan: the extra
  // slot's accumulators, [groups][lanes 0, 1][dweight, dbias][kVec];
  // [stages][segments][2] statistics; [stages][groups][2][slice_packs] staged x
  // and dy. (Ones rather than a run-time "no weight" branch: ptxas duplicated
  // both passes for it, and the dweight product and its sum fell on either
  // side of the join, an FMUL and an FADD instead of one FFMA.)
  unsigned char* const smem = dynamic_smem();
  WPack* w_s = reinterpret_cast<WPack*>(smem);
  // kSpan: a weight copy per row group, or per shift when there are more groups than shifts.
  const int copies = kSpan ? min(groups, kShifts) : 1;
  acc_t* extra = reinterpret_cast<acc_t*>(w_s + copies * slice_packs);
  acc_t* stats = extra + (kSpan ? groups * kSpanExtraPacks * 2 * kVec : 0);
  // Aligned as an offset from the (aligned) base: rounding the address as an
  // integer would hide that it is shared memory, and every staged read would
  // become a generic load with 64-bit address arithmetic.
  const int64_t stats_end = reinterpret_cast<unsigned char*>(stats + stages * segments * 2) - smem;
  XPack* stage = reinterpret_cast<XPack*>(smem + (stats_end + kPackBytes - 1) / kPackBytes * kPackBytes);

  const int64_t iters = first_row < rows ? (rows - first_row + row_step - 1) / row_step : 0;
  auto staged = [&](int64_t k) { return stage + ((k % stages) * groups + group) * 2 * slice_packs; };
  auto row_stats = [&](int64_t k) { return stats + ((k % stages) * segments + segment) * 2; };
  auto issue = [&](int64_t k) {
    staged_load_row<kRms>(
        s, x, dy, mean, rstd, first_row + k * row_step + group, rows, first_pack, [&] { return staged(k); },
        [&] { return row_stats(k); }, segment_threads);
  };
  // The first rows are requested before the weight slice is read, so the two
  // memory round trips overlap (few-row calls are one such chain); with one
  // stage, the first row too.
  const int64_t ahead = stages > 1 ? stages - 1 : 1;
  for (int64_t k = 0; k < ahead; ++k) {
    if (k < iters) {
      issue(k);
    }
    cp_async_commit();
  }
  if constexpr (kSpan) {
    // Group g < copies fills copy g: its own shift, or shift g.
    const int fill_shift = groups <= kShifts ? span.shift : group;
    WPack* fill = w_s + group * slice_packs;
    w_s += (groups <= kShifts ? group : span.shift) * slice_packs;
    extra += group * kSpanExtraPacks * 2 * kVec;
    // (Every pack of the slice: another shift may cover more packs than the filling group's.)
    for (int j = lane; group < copies && j < slice_packs; j += threads_per_row) {
      const int c0 = (pack0 + j) * kVec - fill_shift;
      WPack wp;
      if (weight != nullptr) {
        // (A pack wholly before the row is masked below; any columns do.)
        wp = load_span_param(reinterpret_cast<const WPack*>(weight), max(c0, 1 - kVec), static_cast<int>(cols));
      } else {
#pragma unroll
        for (int e = 0; e < kVec; e += 2) {
          wp.set2(e, acc_t(1), acc_t(1));
        }
      }
      wp.keep(-c0, static_cast<int>(cols) - c0);
      fill[j] = wp;
    }
    if (lane < kSpanExtraPacks) {
#pragma unroll
      for (int i = 0; i < 2 * kVec; ++i) {
        extra[lane * 2 * kVec + i] = acc_t(0);
      }
    }
  } else {
    for (int j = threadIdx.x; j < packs; j += blockDim.x) {
      if (weight != nullptr) {
        w_s[j] = load_param(reinterpret_cast<const WPack*>(weight) + pack0 + j);
      } else {
        WPack ones;
#pragma unroll
        for (int e = 0; e < kVec; e += 2) {
          ones.set2(e, acc_t(1), acc_t(1));
        }
        w_s[j] = ones;
      }
    }
  }
  row_reduce_init(scratch, cluster);
  __syncthreads();

  acc_t dw_acc[kElems];
  acc_t db_acc[kRms ? 1 : kElems];
#pragma unroll
  for (int e = 0; e < kElems; ++e) {
    dw_acc[e] = acc_t(0);
    if constexpr (!kRms) {
      db_acc[e] = acc_t(0);
    }
  }
  // Accumulator `which` (0: dweight, 1: dbias) of element e of slot p.
  auto acc = [&](int which, int p, int e) -> acc_t& {
    if (kSpan && p == kPacks) {
      return extra[(lane * 2 + which) * kVec + e];
    }
    const int i = std::min(p, kPacks - 1) * kVec + e;
    if constexpr (kRms) {
      return dw_acc[i];
    } else {
      return which == 0 ? dw_acc[i] : db_acc[i];
    }
  };
  auto weight_at = [&](int e, const WPack& wp) { return static_cast<acc_t>(wp.get(e)); };

  int reduce_calls = 0;
  for (int64_t k = 0; k < iters; ++k) {
    // The slot refilled below held the previous row's statistics, which the
    // whole segment read (rows of up to 32 threads reduce by shuffles alone).
    __syncwarp();
    if (k + stages - 1 < iters && k + stages - 1 >= ahead) {
      issue(k + stages - 1);
    }
    cp_async_commit();
    cp_async_wait(stages - 1);
    __syncwarp();  // the statistics were copied by the segment's first thread
    const XPack* xs = staged(k);
    const acc_t* st = row_stats(k);
    const acc_t m = kRms ? acc_t(0) : st[0];
    const acc_t r = st[1];

    // (sum(g * (x - mean)) is times rstd once the row is added up.)
    acc_t sums[kSums];
#pragma unroll
    for (int i = 0; i < kSums; ++i) {
      sums[i] = acc_t(0);
    }
#pragma unroll
    for (int p = 0; p < kSlots; ++p) {
      const int j = lane + p * threads_per_row;
      if (j < packs) {
        XPack xp;
        XPack gp;
        s.read(xs, j, xp, gp);
        const WPack wp = w_s[j];
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          const acc_t g = gp.get(e) * weight_at(e, wp);
          if constexpr (kRms) {
            sums[0] += g * xp.get(e);
          } else {
            sums[0] += g;
            sums[1] += g * (xp.get(e) - m);
          }
        }
      }
    }
    row_reduce(sums, threads_per_row, cluster, scratch, reduce_calls);
    const acc_t mean_g = kRms ? acc_t(0) : sums[0] * inv_cols;
    const acc_t mean_gx = sums[kSums - 1] * r * inv_cols;
    // 16-bit: xhat as one FMA, x * r - m * r (rounding far under dx's).
    const acc_t neg_mr = -m * r;

    const int64_t row = first_row + k * row_step + group;
    if (row < rows) {
      XPack* dxr = reinterpret_cast<XPack*>(dx) + first_pack(row) + pack0;
#pragma unroll
      for (int p = 0; p < kSlots; ++p) {
        const int j = lane + p * threads_per_row;
        if (j < packs) {
          XPack xp;
          XPack gp;
          s.read(xs, j, xp, gp);
          const WPack wp = w_s[j];
          XPack out;
#pragma unroll
          for (int e = 0; e < kVec; e += 2) {
            acc_t v[2];
#pragma unroll
            for (int i = 0; i < 2; ++i) {
              const acc_t xv = xp.get(e + i);
              const acc_t xhat = kRms ? xv * r : sizeof(scalar_t) == 2 ? fma(xv, r, neg_mr) : (xv - m) * r;
              const acc_t d = gp.get(e + i);
              v[i] = r * (d * weight_at(e + i, wp) - mean_g - xhat * mean_gx);
              acc(0, p, e + i) += d * xhat;
              if constexpr (!kRms) {
                acc(1, p, e + i) += d;
              }
            }
            out.set2(e, v[0], v[1]);
          }
          if (s.edge(j)) {
            store_span_edge(reinterpret_cast<scalar_t*>(dxr + j), out, -s.column0(j), cols - s.column0(j));
          } else {
            store_stream(dxr + j, out);
          }
        }
      }
    }
  }

  // Add the row groups of this CTA in a fixed order, through the (now idle)
  // staging memory, and write the CTA's columns of its partial row.
  cp_async_wait(0);
  acc_t* sums_s = reinterpret_cast<acc_t*>(stage);  // [groups][slice_cols]
  const int slice_cols = kSpan ? max(col_end - col_begin, 0) : packs * kVec;
  acc_t* const parts[2] = {dw_part, db_part};
  weight_t* const finals[2] = {dweight, dbias};
  staged_column_sums<kVec, kSlots, kSpan, kRms>(sums_s, slice_cols, col_begin, packs, lane, threads_per_row, group,
                                                groups, cluster_id, cols, parts, finals, acc,
                                                [&](int j) { return s.column0(j); });
  // No cluster barrier before leaving: every write into this CTA's shared
  // memory was counted on its mbarriers, whose last phase it waited for.
}

// Few rows (decode-time shapes): one launch of two kinds of blocks that need
// nothing from each other. The first `row_blocks` blocks write dx, a row group
// of `threads_per_row` threads per row with its packs in registers; the others
// each own kFewColPacks packs of columns and add dweight / dbias over every row
// (x and dy read again, mostly from L2), in a fixed order, straight into the
// outputs. No shared-memory staging, no partial rows, no second launch: the
// chain is one memory round trip and one reduction in each kind of block.
// A row block holds `rows_per_block` rows (one when the rows are spread), kPacks
// packs a thread.
template <typename scalar_t, typename weight_t, int kPacks>
__global__ void __launch_bounds__(kFewThreads)
    norm_bwd_few_rows_kernel(const scalar_t* __restrict__ dy, const scalar_t* __restrict__ x,
                             const at::opmath_type<scalar_t>* __restrict__ mean,
                             const at::opmath_type<scalar_t>* __restrict__ rstd, const weight_t* __restrict__ weight,
                             scalar_t* __restrict__ dx, weight_t* __restrict__ dweight, weight_t* __restrict__ dbias,
                             int64_t rows, int64_t cols, int threads_per_row, int rows_per_block, int64_t row_blocks) {
  using acc_t = at::opmath_type<scalar_t>;
  constexpr int kVec = kPackBytes / sizeof(scalar_t);
  using XPack = RawPack<scalar_t, kVec>;
  using WPack = RawPack<weight_t, kVec>;
  constexpr int kWarps = kFewThreads / kWarpSize;
  constexpr int kColElems = kFewColPacks * kVec;
  __shared__ acc_t scratch[64];
  __shared__ acc_t col_sums[kWarps][2][kColElems];
  const int64_t num_packs = cols / kVec;
  const XPack* xs = reinterpret_cast<const XPack*>(x);
  const XPack* gs = reinterpret_cast<const XPack*>(dy);

  if (blockIdx.x < row_blocks) {
    const int lane = threadIdx.x & (threads_per_row - 1);
    // Groups past rows_per_block only take part in the reduction's barriers.
    const int group = threadIdx.x >> log2_pow2(threads_per_row);
    const int64_t row = static_cast<int64_t>(blockIdx.x) * rows_per_block + group;
    const bool ok = group < rows_per_block && row < rows;
    XPack xp[kPacks];
    XPack gp[kPacks];
    WPack wp[kPacks];
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      const int64_t j = lane + static_cast<int64_t>(p) * threads_per_row;
      xp[p].zero();
      gp[p].zero();
      if (ok && j < num_packs) {
        // Plain loads: the dweight / dbias blocks read these packs again.
        xp[p] = load_row(xs + row * num_packs + j);
        gp[p] = load_row(gs + row * num_packs + j);
      }
      if (ok && weight != nullptr && j < num_packs) {
        wp[p] = load_param(reinterpret_cast<const WPack*>(weight) + j);
      } else {
#pragma unroll
        for (int e = 0; e < kVec; e += 2) {
          wp[p].set2(e, acc_t(1), acc_t(1));
        }
      }
    }
    const acc_t m = ok && mean != nullptr ? mean[row] : acc_t(0);
    const acc_t r = ok ? rstd[row] : acc_t(0);
    Pair<acc_t> sums{acc_t(0), acc_t(0)};
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        const acc_t g = gp[p].get(e) * static_cast<acc_t>(wp[p].get(e));
        sums.a += g;
        sums.b += g * ((xp[p].get(e) - m) * r);
      }
    }
    sums = row_sum2(sums, threads_per_row, scratch);
    const acc_t inv_cols = acc_t(1) / static_cast<acc_t>(cols);
    const acc_t mean_g = mean != nullptr ? sums.a * inv_cols : acc_t(0);
    const acc_t mean_gx = sums.b * inv_cols;
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      const int64_t j = lane + static_cast<int64_t>(p) * threads_per_row;
      if (ok && j < num_packs) {
        XPack out;
#pragma unroll
        for (int e = 0; e < kVec; e += 2) {
          acc_t v[2];
#pragma unroll
          for (int i = 0; i < 2; ++i) {
            const acc_t xhat = (xp[p].get(e + i) - m) * r;
            v[i] = r * (gp[p].get(e + i) * static_cast<acc_t>(wp[p].get(e + i)) - mean_g - xhat * mean_gx);
          }
          out.set2(e, v[0], v[1]);
        }
        store_stream(reinterpret_cast<XPack*>(dx) + row * num_packs + j, out);
      }
    }
    return;
  }

  // dweight / dbias: thread (row lane, pack lane) adds rows row_lane,
  // row_lane + row_lanes, ... of pack `j`; the row lanes of a warp meet by
  // butterflies, the warps through shared memory in warp order.
  const int pack_lane = threadIdx.x % kFewColPacks;
  const int row_lanes = blockDim.x / kFewColPacks;
  const int64_t col_pack0 = (blockIdx.x - row_blocks) * kFewColPacks;
  const int64_t j = col_pack0 + pack_lane;
  acc_t dw[kVec];
  acc_t db[kVec];
#pragma unroll
  for (int e = 0; e < kVec; ++e) {
    dw[e] = acc_t(0);
    db[e] = acc_t(0);
  }
  if (j < num_packs) {
#pragma unroll 4
    for (int64_t row = threadIdx.x / kFewColPacks; row < rows; row += row_lanes) {
      const XPack xp = load_row(xs + row * num_packs + j);
      const XPack gp = load_row(gs + row * num_packs + j);
      const acc_t m = mean != nullptr ? mean[row] : acc_t(0);
      const acc_t r = rstd[row];
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        const acc_t d = gp.get(e);
        dw[e] += d * ((xp.get(e) - m) * r);
        db[e] += d;
      }
    }
  }
#pragma unroll
  for (int e = 0; e < kVec; ++e) {
#pragma unroll
    for (int offset = kFewColPacks; offset < kWarpSize; offset *= 2) {
      dw[e] += __shfl_xor_sync(0xffffffffu, dw[e], offset);
      db[e] += __shfl_xor_sync(0xffffffffu, db[e], offset);
    }
  }
  const int warp = threadIdx.x / kWarpSize;
  if (threadIdx.x % kWarpSize < kFewColPacks) {
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      col_sums[warp][0][pack_lane * kVec + e] = dw[e];
      col_sums[warp][1][pack_lane * kVec + e] = db[e];
    }
  }
  __syncthreads();
  if (threadIdx.x < 2 * kColElems) {
    const int which = threadIdx.x / kColElems;
    const int c = threadIdx.x % kColElems;
    const int64_t col = col_pack0 * kVec + c;
    weight_t* const out = which == 0 ? dweight : dbias;
    if (out != nullptr && col < cols) {
      acc_t total = acc_t(0);
      for (int w = 0; w < static_cast<int>(blockDim.x / kWarpSize); ++w) {
        total += col_sums[w][which][c];
      }
      out[col] = static_cast<weight_t>(total);
    }
  }
}

// -----------------------------------------------------------------------------
// Launchers
// -----------------------------------------------------------------------------

template <typename scalar_t, typename weight_t>
struct BwdArgs {
  const scalar_t* dy;
  const scalar_t* x;
  const at::opmath_type<scalar_t>* mean;
  const at::opmath_type<scalar_t>* rstd;
  const weight_t* weight;
  scalar_t* dx;
  weight_t* dweight;
  weight_t* dbias;
  int64_t rows;
  int64_t cols;
  at::TensorOptions acc_options;
};

// Calls g(std::integral_constant<int, P>) for packs == P when the kernel of kVariant is built for
// P packs a thread (for x of scalar_t); false when it is not.
template <BwdVariant kVariant, typename scalar_t, typename G>
bool with_packs(int packs, G&& g) {
  bool found = false;
  auto one = [&](auto p) {
    constexpr int kPacks = decltype(p)::value;
    if constexpr (bwd_kernel_exists(kVariant, kPacks, sizeof(scalar_t))) {
      if (packs == kPacks) {
        g(p);
        found = true;
      }
    }
  };
  one(std::integral_constant<int, 1>{});
  one(std::integral_constant<int, 2>{});
  one(std::integral_constant<int, 4>{});
  one(std::integral_constant<int, 8>{});
  return found;
}

// Calls f(kernel) with the compiled kernel of a family that `k` names, for x of scalar_t and parameters
// of weight_t; false when that kernel is not built (no plan names one).
template <typename scalar_t, typename weight_t, typename F>
bool with_few_rows_kernel(const BwdKernel& k, F&& f) {
  return with_packs<BwdVariant::kFewRows, scalar_t>(
      k.packs, [&](auto p) { f(norm_bwd_few_rows_kernel<scalar_t, weight_t, decltype(p)::value>); });
}

template <typename scalar_t, typename weight_t, typename F>
bool with_staged_kernel(const BwdKernel& k, F&& f) {
  return BOOL_SWITCH(k.norm == Norm::kRms, kRms, [&] {
    return BOOL_SWITCH(k.variant == BwdVariant::kStagedSpan, kSpan, [&] {
      constexpr BwdVariant kVariant = kSpan ? BwdVariant::kStagedSpan : BwdVariant::kStaged;
      constexpr RowLayout kLayout = kSpan ? RowLayout::kSpan : RowLayout::kAligned;
      constexpr Norm kNorm = kRms ? Norm::kRms : Norm::kLayerNorm;
      return with_packs<kVariant, scalar_t>(
          k.packs, [&](auto p) { f(norm_bwd_staged_kernel<scalar_t, weight_t, decltype(p)::value, kLayout, kNorm>); });
    });
  });
}

template <typename scalar_t, typename weight_t, typename F>
bool with_rows_kernel(const BwdKernel& k, F&& f) {
  constexpr int kVec = kPackBytes / sizeof(scalar_t);
  if (k.variant == BwdVariant::kRows) {
    return with_packs<BwdVariant::kRows, scalar_t>(
        k.packs, [&](auto p) { f(norm_bwd_kernel<scalar_t, weight_t, kVec, decltype(p)::value>); });
  }
  return with_packs<BwdVariant::kRowsElems, scalar_t>(
      k.packs, [&](auto p) { f(norm_bwd_kernel<scalar_t, weight_t, 1, decltype(p)::value>); });
}

// The two-pass variants' first (row statistics) or second (columns) kernel.
template <typename scalar_t, typename weight_t, bool kColumns, typename F>
bool with_wide_kernel(const BwdKernel& k, F&& f) {
  BOOL_SWITCH(k.variant == BwdVariant::kWide, kPacked, [&] {
    constexpr int kV = kPacked ? kPackBytes / sizeof(scalar_t) : 1;
    if constexpr (kColumns) {
      f(norm_bwd_columns_kernel<scalar_t, weight_t, kV>);
    } else {
      f(norm_bwd_row_stats_kernel<scalar_t, weight_t, kV>);
    }
  });
  return k.packs == 0;
}

// Any backward kernel (for the occupancy queries, which take every kernel alike).
template <typename scalar_t, typename weight_t, typename F>
bool with_bwd_kernel(const BwdKernel& k, F&& f) {
  switch (k.variant) {
    case BwdVariant::kFewRows:
      return with_few_rows_kernel<scalar_t, weight_t>(k, f);
    case BwdVariant::kStaged:
    case BwdVariant::kStagedSpan:
      return with_staged_kernel<scalar_t, weight_t>(k, f);
    case BwdVariant::kRows:
    case BwdVariant::kRowsElems:
      return with_rows_kernel<scalar_t, weight_t>(k, f);
    case BwdVariant::kWide:
    case BwdVariant::kWideElems:
      return k.columns ? with_wide_kernel<scalar_t, weight_t, true>(k, f)
                       : with_wide_kernel<scalar_t, weight_t, false>(k, f);
  }
  return false;
}

// A kernel the planner named that is not built is an internal error.
inline void check_kernel(bool found, const BwdKernel& k) {
  TORCH_CHECK(found, "reference_ops: internal error, no backward kernel for variant ", bwd_variant_name(k.variant),
              " at ", k.packs, " packs per thread");
}

// The runtime's occupancy of the compiled kernels, for plan_bwd.
template <typename scalar_t, typename weight_t>
class RuntimeBwdOccupancy final : public BwdOccupancy {
 public:
  int ctas_per_sm(const BwdKernel& k, int threads, int64_t smem_bytes) const override {
    int per_sm = 0;
    check_kernel(with_bwd_kernel<scalar_t, weight_t>(k,
                                                     [&](auto kernel) {
                                                       C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                                                           &per_sm, kernel, threads, smem_bytes));
                                                     }),
                 k);
    return per_sm;
  }
  int64_t static_smem_bytes(const BwdKernel& k) const override {
    cudaFuncAttributes attr{};
    check_kernel(with_bwd_kernel<scalar_t, weight_t>(
                     k, [&](auto kernel) { C10_CUDA_CHECK(cudaFuncGetAttributes(&attr, kernel)); }),
                 k);
    return static_cast<int64_t>(attr.sharedSizeBytes);
  }
  int64_t resident_clusters(const BwdKernel& k, int threads, int cluster, int64_t smem_bytes) const override {
    StagedConfig c;
    c.threads_per_row = threads;
    c.cluster = cluster;
    c.smem_bytes = static_cast<size_t>(smem_bytes);
    int64_t resident = 0;
    check_kernel(
        with_staged_kernel<scalar_t, weight_t>(k, [&](auto kernel) { resident = cuda::resident_clusters(kernel, c); }),
        k);
    return resident;
  }
};

template <typename acc_t>
acc_t* data_or_null(at::Tensor& t) {
  return t.defined() ? t.mutable_data_ptr<acc_t>() : nullptr;
}

// `parts` partial rows of a parameter gradient (when it is asked for: `out` set), for
// column_sum_kernel to add.
template <typename scalar_t, typename weight_t>
at::Tensor partial_rows(const BwdArgs<scalar_t, weight_t>& a, const weight_t* out, int64_t parts) {
  return out != nullptr ? at::empty({parts, a.cols}, a.acc_options) : at::Tensor();
}

// Adds the plan's sum_parts partial rows into dweight / dbias, in one launch for both.
template <typename scalar_t, typename weight_t>
void launch_plan_column_sums(const BwdPlan& plan, const BwdArgs<scalar_t, weight_t>& a, const at::Tensor& dw_part,
                             const at::Tensor& db_part) {
  using acc_t = at::opmath_type<scalar_t>;
  const bool both = a.dweight != nullptr && a.dbias != nullptr;
  launch_column_sums(a.dweight != nullptr ? dw_part.const_data_ptr<acc_t>() : db_part.const_data_ptr<acc_t>(),
                     a.dweight != nullptr ? a.dweight : a.dbias, both ? db_part.const_data_ptr<acc_t>() : nullptr,
                     both ? a.dbias : nullptr, plan.sum_parts, a.cols, plan.sum_vec, at::cuda::getCurrentCUDAStream());
}

template <typename scalar_t, typename weight_t>
void launch_norm_bwd_few_rows(const BwdPlan& plan, const BwdArgs<scalar_t, weight_t>& a) {
  const BwdKernel k{plan.variant, plan.packs_per_thread, plan.norm, false};
  const bool found = with_few_rows_kernel<scalar_t, weight_t>(k, [&](auto kernel) {
    kernel<<<plan.grid, plan.threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        a.dy, a.x, a.mean, a.rstd, a.weight, a.dx, a.dweight, a.dbias, a.rows, a.cols, plan.threads_per_row,
        plan.groups, plan.row_blocks);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  check_kernel(found, k);
}

template <typename scalar_t, typename weight_t>
void launch_norm_bwd_staged(const BwdPlan& plan, const BwdArgs<scalar_t, weight_t>& a) {
  using acc_t = at::opmath_type<scalar_t>;
  StagedConfig c;
  c.threads_per_row = plan.threads_per_row;
  c.groups = plan.groups;
  c.cluster = plan.cluster;
  c.stages = plan.stages;
  c.slice_packs = plan.slice_packs;
  c.smem_bytes = static_cast<size_t>(plan.smem_bytes);
  // One cluster adds every row itself; more write partial rows for column_sum_kernel.
  const bool direct = plan.clusters == 1;
  at::Tensor dw_part = direct ? at::Tensor() : partial_rows(a, a.dweight, plan.clusters);
  at::Tensor db_part = direct ? at::Tensor() : partial_rows(a, a.dbias, plan.clusters);
  const BwdKernel k{plan.variant, plan.packs_per_thread, plan.norm, false};
  const bool found = with_staged_kernel<scalar_t, weight_t>(k, [&](auto kernel) {
    launch_staged(kernel, c, plan.clusters, a.dy, a.x, a.mean, a.rstd, a.weight, a.dx, data_or_null<acc_t>(dw_part),
                  data_or_null<acc_t>(db_part), direct ? a.dweight : nullptr, direct ? a.dbias : nullptr, a.rows,
                  a.cols, c.threads_per_row, c.cluster, c.stages, c.slice_packs);
  });
  check_kernel(found, k);
  if (plan.sum_parts > 0) {
    launch_plan_column_sums(plan, a, dw_part, db_part);
  }
}

template <typename scalar_t, typename weight_t>
void launch_norm_bwd_rows(const BwdPlan& plan, const BwdArgs<scalar_t, weight_t>& a) {
  using acc_t = at::opmath_type<scalar_t>;
  at::Tensor dw_part = partial_rows(a, a.dweight, plan.grid);
  at::Tensor db_part = partial_rows(a, a.dbias, plan.grid);
  const BwdKernel k{plan.variant, plan.packs_per_thread, plan.norm, false};
  const bool found = with_rows_kernel<scalar_t, weight_t>(k, [&](auto kernel) {
    kernel<<<plan.grid, kBwdThreads, 0, at::cuda::getCurrentCUDAStream()>>>(
        a.dy, a.x, a.mean, a.rstd, a.weight, a.dx, data_or_null<acc_t>(dw_part), data_or_null<acc_t>(db_part), a.rows,
        a.cols, plan.threads_per_row);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  check_kernel(found, k);
  if (plan.sum_parts > 0) {
    launch_plan_column_sums(plan, a, dw_part, db_part);
  }
}

template <typename scalar_t, typename weight_t>
void launch_norm_bwd_wide(const BwdPlan& plan, const BwdArgs<scalar_t, weight_t>& a) {
  using acc_t = at::opmath_type<scalar_t>;
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  at::Tensor row_stats = at::empty({a.rows, 2}, a.acc_options);
  const BwdKernel stats{plan.variant, 0, plan.norm, false};
  const bool found_stats = with_wide_kernel<scalar_t, weight_t, false>(stats, [&](auto kernel) {
    kernel<<<plan.stats_grid, kWideStatsThreads, 0, stream>>>(a.dy, a.x, a.mean, a.rstd, a.weight,
                                                              row_stats.mutable_data_ptr<acc_t>(), a.rows, a.cols);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  check_kernel(found_stats, stats);
  at::Tensor dw_part = partial_rows(a, a.dweight, plan.chunks);
  at::Tensor db_part = partial_rows(a, a.dbias, plan.chunks);
  TORCH_CHECK(plan.chunks <= 65535, "reference_ops: too many rows (", a.rows, ") for the wide-row backward");
  const dim3 grid(static_cast<unsigned>(plan.strips), static_cast<unsigned>(plan.chunks));
  const BwdKernel columns{plan.variant, 0, plan.norm, true};
  const bool found_columns = with_wide_kernel<scalar_t, weight_t, true>(columns, [&](auto kernel) {
    kernel<<<grid, kColumnsThreads, 0, stream>>>(a.dy, a.x, a.mean, a.rstd, a.weight, row_stats.const_data_ptr<acc_t>(),
                                                 a.dx, data_or_null<acc_t>(dw_part), data_or_null<acc_t>(db_part),
                                                 a.rows, a.cols, plan.rows_per_chunk);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  check_kernel(found_columns, columns);
  if (plan.sum_parts > 0) {
    launch_plan_column_sums(plan, a, dw_part, db_part);
  }
}

// Plans the call (plan_bwd, norm_plan.cpp) and launches the planned variant.
template <typename scalar_t, typename weight_t>
void dispatch_norm_bwd(const BwdArgs<scalar_t, weight_t>& a) {
  static_assert(static_cast<int>(sizeof(at::opmath_type<scalar_t>)) == bwd_acc_bytes(sizeof(scalar_t)),
                "the planner's acc size");
  const BwdCall call{a.rows,
                     a.cols,
                     static_cast<int>(sizeof(scalar_t)),
                     static_cast<int>(sizeof(weight_t)),
                     a.mean == nullptr ? Norm::kRms : Norm::kLayerNorm,
                     a.dweight != nullptr,
                     a.dbias != nullptr,
                     reinterpret_cast<uintptr_t>(a.x),
                     reinterpret_cast<uintptr_t>(a.dy),
                     reinterpret_cast<uintptr_t>(a.dx),
                     reinterpret_cast<uintptr_t>(a.weight)};
  const BwdPlan plan = plan_bwd(call, device_limits(), RuntimeBwdOccupancy<scalar_t, weight_t>());
  TORCH_CHECK(plan.valid, "reference_ops: internal error, backward variant ", bwd_variant_name(plan.variant), " at ",
              plan.packs_per_thread, " packs per thread");
  switch (plan.variant) {
    case BwdVariant::kFewRows:
      launch_norm_bwd_few_rows(plan, a);
      return;
    case BwdVariant::kStaged:
    case BwdVariant::kStagedSpan:
      launch_norm_bwd_staged(plan, a);
      return;
    case BwdVariant::kRows:
    case BwdVariant::kRowsElems:
      launch_norm_bwd_rows(plan, a);
      return;
    case BwdVariant::kWide:
    case BwdVariant::kWideElems:
      launch_norm_bwd_wide(plan, a);
      return;
  }
}

}  // namespace

void norm_bwd(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean, const at::Tensor& rstd,
              const at::Tensor& weight, at::Tensor& dx, at::Tensor& dweight, at::Tensor& dbias, NormShape shape) {
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
    using scalar_t = decltype(t);
    using weight_t = decltype(w);
    using acc_t = at::opmath_type<scalar_t>;
    dispatch_norm_bwd<scalar_t, weight_t>(BwdArgs<scalar_t, weight_t>{
        dy.const_data_ptr<scalar_t>(), x.const_data_ptr<scalar_t>(),
        mean.defined() ? mean.const_data_ptr<acc_t>() : nullptr, rstd.const_data_ptr<acc_t>(),
        weight.defined() ? weight.const_data_ptr<weight_t>() : nullptr, dx.mutable_data_ptr<scalar_t>(),
        dweight.defined() ? dweight.mutable_data_ptr<weight_t>() : nullptr,
        dbias.defined() ? dbias.mutable_data_ptr<weight_t>() : nullptr, shape.rows, shape.cols,
        x.options().dtype(c10::CppTypeToScalarType<acc_t>::value)});
  });
}

}  // namespace cuda
}  // namespace reference_ops
