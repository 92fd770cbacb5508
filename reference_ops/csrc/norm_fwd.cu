// CUDA forward kernels of reference_ops::layer_norm_fwd and
// reference_ops::rms_norm_fwd.
//
// One kernel family serves both ops (RMSNorm is LayerNorm without centring and
// bias), chosen in dispatch_norm_fwd:
//   * norm_fwd_rows_kernel (16-byte packs; for N not a multiple of the pack,
//     the packs of the tensor that cover each row): a plain grid of CTAs, the
//     row in registers (all of a thread's loads in flight at once), the exact
//     two-pass statistics (mean = sum(x)/N, var = sum((x-mean)^2)/N) and the
//     output from the same registers; rows wider than one CTA holds are split
//     over a thread-block cluster (sm_90). Rows that fill every slot of every
//     thread take instantiations without bounds checks (kFull; kGroup for
//     narrow rows: the group fixed at compile time); there LayerNorm's mean
//     and variance come from one reduction of each thread's sum and M2 about
//     its own mean, combined pairwise (kMoments). Calls of one wave or
//     less (few rows) spread rows thinner and load weight and bias with x
//     (kEarly): their time is latency, not bandwidth.
//   * norm_fwd_uncached_kernel: pointers that are not 16-byte aligned, and rows
//     beyond the register kernel's largest cluster: read twice, with shifted
//     sums (Chan, Golub & LeVeque 1983: sums of x - x[0] and (x - x[0])^2).

#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <torch/library.h>

#include "norm.h"
#include "norm_common.cuh"

namespace reference_ops {
namespace cuda {
namespace {

// Block size of the uncached kernel (one row per block).
constexpr int kUncachedThreads = 1024;

// Register forward: packs per thread aimed for, the most a thread holds (128
// bytes of row in T: 32 registers), the most threads of a CTA below 1024, the
// widest row (in packs) spread at kRowTargetPacks a thread, and the CTA size
// when rows share a CTA.
constexpr int kRowTargetPacks = 4;
constexpr int kRowMaxPacks = 8;
constexpr int kRowMaxThreads = 512;
constexpr int64_t kRowWidePacks = static_cast<int64_t>(kRowMaxThreads) * kRowTargetPacks;
constexpr int kRowBlockThreads = 128;
// Packs a thread aimed for in calls of one wave or less.
constexpr int kFewRowPacks = 2;
// Weight and bias: rows wider than kSplitPacks packs go to a cluster whose
// slices hold at most kSplitSlicePacks (256 threads x kRowMaxPacks).
constexpr int64_t kSplitPacks = static_cast<int64_t>(kRowMaxThreads) * kRowMaxPacks;
constexpr int64_t kSplitSlicePacks = 256 * kRowMaxPacks;

// -----------------------------------------------------------------------------
// Kernels
// -----------------------------------------------------------------------------

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
    if (threadIdx.x == 0 && rstd_out != nullptr) {
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

// Register forward (16-byte packs): a plain grid of CTAs, one row per row
// group; each thread issues all of its kPacks loads at once and keeps the packs
// (as raw words of T) in registers for the exact two-pass statistics
// (mean = sum(x)/N, var = sum((x-mean)^2)/N) and the output; x, weight and
// bias come through the read-only cache, weight and bias evict-last in L2
// (load_param). Several CTAs per SM overlap one row's
// reductions with the others' memory traffic. Rows wider than one CTA holds
// are split over a thread-block cluster (sm_90): CTA `rank` takes the slice of
// `slice_packs` packs starting at rank * slice_packs, and the sums meet through
// distributed shared memory. kSpan: N is not a multiple of kVec, and each row
// is the span of the tensor's packs that covers it (RowSpan): edge packs are
// masked on load and written element by element, weight and bias are the
// tables of span_param_table_kernel (one pack-aligned copy per shift, row
// `shift` of `param_stride` packs), and the span's one or two packs beyond the
// aligned width take one more slot (used by lanes 0 and 1 only), so a span row
// is spread over threads like an aligned row of its width.
template <
    typename T,
    typename W,
    int kVec,
    int kPacks,
    bool kRms,
    bool kCluster,
    bool kSpan,
    bool kFull,
    int kGroup,
    bool kEarly = false>
__global__ void __launch_bounds__(kEarly ? kRowMaxThreads : kMaxThreadsPerRow, 1) norm_fwd_rows_kernel(
    const T* __restrict__ x,
    const W* __restrict__ weight,
    const W* __restrict__ bias,
    T* __restrict__ y,
    at::opmath_type<T>* __restrict__ mean_out,
    at::opmath_type<T>* __restrict__ rstd_out,
    int64_t rows,
    int cols,
    int threads_per_row,
    int cluster_size,
    int slice_packs,
    int param_stride,
    at::opmath_type<T> eps,
    bool plain_y) {
  using acc_t = at::opmath_type<T>;
  // kFull: aligned rows of exactly cluster x threads_per_row x kPacks packs,
  // so every slot holds a pack of the row: no bounds per slot or element, the
  // lane in the pointers (immediate offsets), weight / bias presence decided
  // once. kGroup > 0 (narrow rows, on kGroup threads, a warp or less): the
  // group is fixed at compile time too, hence N and 1 / N, the
  // butterfly, and x is kept as floats. (A third fewer instructions executed
  // at N = 512; on an H200 the issue slots, not DRAM, were the limit.)
  constexpr bool kFixed = kGroup > 0;
  static_assert(!kFull || !kSpan, "full rows are aligned rows");
  static_assert(!kFixed || (kFull && !kCluster && kGroup <= 32), "fixed groups: narrow rows");
  const int group = kFixed ? kGroup : threads_per_row;
  const int width = kFixed ? kGroup * kPacks * kVec : cols;
  using XPack = RawPack<T, kVec>;
  using WPack = RawPack<W, kVec>;
  constexpr int kSlots = kPacks + (kSpan ? 1 : 0);
  // Up to 4 packs a thread has registers to spare under the 64-register cap:
  // the passes below then spend fewer instructions per element (at 8 packs the
  // same forms make ptxas spill).
  constexpr bool kLean = kPacks <= 4;
  // Full LayerNorm rows: every thread holds as many elements, so the mean and
  // the variance come from one reduction of each thread's sum and M2 about its
  // own mean (MomentsCombine; two reductions otherwise, the second after the
  // mean). H100: LN bf16 2048x32768 forward 94.0 -> 93.3 us. (v17 loaded
  // 8-pack rows' first weight / bias pack with x; beside the two moments,
  // ptxas spills them and the forward ran 2 % slower.)
  constexpr bool kMoments = !kRms && kFull;
  __shared__ ReduceScratch<acc_t, kMoments ? 2 : 1, (kCluster ? kMaxClusterSize : 1) * kMaxThreadsPerRow / 32> scratch;
  // Compile-time 1 without a cluster: the cluster code (and its registers)
  // drops out.
  const int cluster = kCluster ? cluster_size : 1;
  const int lane = threadIdx.x & (group - 1);
  const int rank = kCluster ? static_cast<int>(cluster_rank()) : 0;
  const int group_shift = log2_pow2(group);
  const int64_t row =
      static_cast<int64_t>(blockIdx.x / cluster) * (blockDim.x >> group_shift) + (threadIdx.x >> group_shift);
  // Groups past the last row still take part in the reductions.
  const bool ok = row < rows;
  RowSpan span{(ok ? row : 0) * (width / kVec), 0, width / kVec};
  if constexpr (kSpan) {
    span = row_span<kVec>(ok ? row : 0, width);
  }
  const int pack0 = rank * slice_packs;
  const int left = span.packs - pack0;
  const int packs = kFull ? kPacks * group : left < slice_packs ? left : slice_packs;
  // Pointers of the row's slice, plus this thread's lane in full rows: slot p
  // is then a fixed offset (`at`; the other kernels keep the lane in the index,
  // which ptxas allocates better for them).
  const int lane_in_ptr = kFull ? lane : 0;
  auto at = [&](int p) { return lane - lane_in_ptr + p * group; };
  const XPack* xr = reinterpret_cast<const XPack*>(x) + span.first + pack0 + lane_in_ptr;
  // Span packs: element e of slot p is column column0(p) + e; a row's first and
  // last packs are its edges, which hold elements of the neighbouring rows.
  auto column0 = [&](int p) { return (pack0 + lane + p * group) * kVec - span.shift; };
  unsigned edges = 0; // bit p: slot p holds one of the row's edge packs
  if constexpr (kSpan) {
#pragma unroll
    for (int p = 0; p < kSlots; ++p) {
      const bool in_row = lane + p * group < packs;
      edges |= in_row && (column0(p) < 0 || column0(p) + kVec > width) ? 1u << p : 0u;
    }
  }
  auto edge = [&](int p) { return kSpan && ((edges >> p) & 1u) != 0; };

  // RMSNorm rows of up to 4 packs a thread: the weight packs are loaded with x
  // (registers to spare), so the output pass does not wait for a second round
  // trip, the whole latency of a call of a few rows. (LayerNorm's weight and
  // bias together would spill.)
  // kEarly (LayerNorm calls of one wave or less, where occupancy does not
  // count): weight and bias too, under a 128-register cap.
  static_assert(!kEarly || (kLean && !kRms && !kCluster && !kSpan && sizeof(W) == sizeof(T)), "early parameters");
  constexpr bool kEarlyWeight = (kRms || kEarly) && kLean && sizeof(W) == sizeof(T);
  WPack w_early[kEarlyWeight ? kSlots : 1];
  WPack b_early[kEarly ? kSlots : 1];
  auto load_early_weight = [&] {
    const int param0 = span.shift * param_stride + pack0 + lane_in_ptr;
    const WPack* w0 = reinterpret_cast<const WPack*>(weight) + param0;
#pragma unroll
    for (int p = 0; p < kSlots; ++p) {
      const int j = lane + p * group;
      const bool in_row = ok && (kFull || j < packs);
      // ptxas keeps these loads beside x's as a branch in the fixed groups and
      // as predicated loads elsewhere (each the other way: after x arrived).
      if constexpr (kFixed) {
        if (weight != nullptr && in_row) {
          w_early[p] = load_param(w0 + at(p));
        }
      } else {
        w_early[p] = load_param_if(w0 + at(p), weight != nullptr && in_row);
      }
      if constexpr (kEarly) {
        b_early[p] = load_param_if(reinterpret_cast<const WPack*>(bias) + param0 + at(p), bias != nullptr && in_row);
      }
    }
  };
  // Fixed groups issue the weight loads first (after x's, ptxas scheduled them
  // once x had arrived: a round trip later).
  if constexpr (kEarlyWeight && kFixed) {
    load_early_weight();
  }
  const TailPack tail = kSpan ? tail_pack<kVec>(row, rows, width, span, pack0) : TailPack{-1, 0};
  XPack xp[kSlots];
#pragma unroll
  for (int p = 0; p < kSlots; ++p) {
    const int j = lane + p * group;
    if (ok && (kFull || j < packs)) {
      // Read once, yet not evict-first (ld.global.cs ran 0-1.6 % slower in
      // the bench's back-to-back calls on an H100, most at N = 65536).
      if (kSpan && j == tail.index) {
        xp[p].load_elems(reinterpret_cast<const T*>(xr + at(p)), tail.elems);
      } else {
        xp[p] = load_row(xr + at(p));
      }
    } else {
      xp[p].zero();
    }
  }
  if constexpr (kEarlyWeight && !kFixed) {
    load_early_weight();
  }
  // Edge packs are masked once every load is in flight (a mask between two
  // loads would hold the later ones back until the first arrived).
#pragma unroll
  for (int p = 0; p < kSlots; ++p) {
    if (edge(p)) {
      xp[p].keep(-column0(p), width - column0(p));
    }
  }
  // The passes below unpack the same words in three forms (RawPack::get), so
  // that ptxas converts them again instead of keeping 8 packs of floats; a
  // fixed group keeps its 4 packs as floats (one form), and so do the bounded
  // float16 kernels (three forms there add instructions and remove no spill).
  constexpr bool kOneForm = kFixed || (std::is_same_v<T, c10::Half> && !kFull);
  constexpr int kForm1 = kOneForm ? 0 : 1;
  constexpr int kForm2 = kOneForm ? 0 : 2;
  int reduce_calls = 0;
  if constexpr (kCluster) {
    row_reduce_init(scratch, cluster);
  }
  const acc_t inv_cols = acc_t(1) / static_cast<acc_t>(width);
  acc_t mean = acc_t(0);
  acc_t var = acc_t(0);
  if constexpr (kMoments) {
    constexpr int kElems = kSlots * kVec;
    acc_t m[2] = {acc_t(0), acc_t(0)};
#pragma unroll
    for (int p = 0; p < kSlots; ++p) {
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        m[0] += xp[p].get(e);
      }
    }
    // kElems is a power of two: the thread's mean is exact to its sum.
    static_assert((kElems & (kElems - 1)) == 0, "packs and pack widths are powers of two");
    const acc_t local_mean = m[0] * (acc_t(1) / kElems);
#pragma unroll
    for (int p = 0; p < kSlots; ++p) {
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        const acc_t d = xp[p].template get<kForm1>(e) - local_mean;
        m[1] += d * d;
      }
    }
    row_reduce(m, group, cluster, scratch, reduce_calls, MomentsCombine<acc_t>{acc_t(0.5) / kElems});
    mean = m[0] * inv_cols;
    var = m[1] * inv_cols;
  } else {
    if constexpr (!kRms) {
      acc_t sum[1] = {acc_t(0)};
#pragma unroll
      for (int p = 0; p < kSlots; ++p) {
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          sum[0] += xp[p].get(e);
        }
      }
      row_reduce(sum, group, cluster, scratch, reduce_calls);
      mean = sum[0] * inv_cols;
    }
    acc_t sq[1] = {acc_t(0)};
#pragma unroll
    for (int p = 0; p < kSlots; ++p) {
      const bool in_row = kFull || lane + p * group < packs;
      if (!kRms && edge(p)) {
        // Masked elements are zero: with a mean to subtract they must be left out.
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          const bool in = e >= -column0(p) && e < width - column0(p);
          const acc_t d = in ? xp[p].template get<kForm1>(e) - mean : acc_t(0);
          sq[0] += d * d;
        }
      } else if (kLean) {
        // One select per pack (slots past the row hold zeros, not x - mean).
        acc_t part = acc_t(0);
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          const acc_t d = xp[p].template get<kForm1>(e) - mean;
          part += d * d;
        }
        sq[0] += in_row ? part : acc_t(0);
      } else {
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          const acc_t d = in_row ? xp[p].template get<kForm1>(e) - mean : acc_t(0);
          sq[0] += d * d;
        }
      }
    }
    row_reduce(sq, group, cluster, scratch, reduce_calls);
    var = sq[0] * inv_cols;
  }
  const acc_t rstd = rsqrt_acc(var + eps);
  if (ok) {
    // The inference ops pass no statistics to write.
    if (lane == 0 && rank == 0 && rstd_out != nullptr) {
      if constexpr (!kRms) {
        mean_out[row] = mean;
      }
      rstd_out[row] = rstd;
    }
    XPack* yr = reinterpret_cast<XPack*>(y) + span.first + pack0 + lane_in_ptr;
    const int param0 = span.shift * param_stride + pack0 + lane_in_ptr;
    const WPack* wr = weight != nullptr ? reinterpret_cast<const WPack*>(weight) + param0 : nullptr;
    const WPack* br = bias != nullptr ? reinterpret_cast<const WPack*>(bias) + param0 : nullptr;
    // 16-bit LayerNorm: (x - mean) * rstd as one FMA, x * rstd - mean * rstd
    // (its rounding, 2^-24 * |mean| * rstd, is far under the output's).
    constexpr bool kFold = (kLean || kFull) && sizeof(T) == 2 && !kRms;
    const acc_t neg_mean_rstd = -mean * rstd;
    // Rows of up to 4 packs a thread load the weight / bias packs of
    // kParamBatch slots before using any: one round trip to L2 per batch
    // instead of one per slot (the whole write pass waited on each in turn).
    // Up to 32 registers of them; 16 beside a span row's bookkeeping, and for
    // float16, whose passes ptxas converts once and keeps (more spills). At 8
    // packs a second slot's parameters do not fit (ptxas spills).
    constexpr int kParamRegs = (kRms ? 1 : 2) * static_cast<int>(sizeof(WPack)) / 4;
    constexpr int kParamBudget = kSpan || std::is_same_v<T, c10::Half> ? 16 : 32;
    constexpr int kParamBatch = kLean ? std::max(1, std::min(kSlots, kParamBudget / kParamRegs)) : 1;
    // has_weight / has_bias: bool, or std::bool_constant to drop what is absent
    // at compile time (a missing factor is 1 and a missing term -0, which
    // leave t unchanged).
    auto write = [&](auto has_weight, auto has_bias) {
      auto fetch = [&](int p, WPack& wp, WPack& bp) {
        if constexpr (kEarlyWeight) {
          wp = w_early[p];
        } else if (has_weight) {
          wp = load_param(wr + at(p));
        }
        if constexpr (kEarly) {
          bp = b_early[p];
        } else if (has_bias) {
          bp = load_param(br + at(p));
        }
      };
      auto emit = [&](int p, const WPack& wp, const WPack& bp) {
        auto value = [&](int e) {
          const acc_t xv = xp[p].template get<kForm2>(e);
          const acc_t t = kFold ? fma(xv, rstd, neg_mean_rstd) : (xv - mean) * rstd;
          const acc_t wv = has_weight ? static_cast<acc_t>(wp.get(e)) : acc_t(1);
          const acc_t bv = has_bias ? static_cast<acc_t>(bp.get(e)) : -acc_t(0);
          return t * wv + bv;
        };
        XPack out;
#pragma unroll
        for (int e = 0; e < kVec; e += 2) {
          out.set2(e, value(e), value(e + 1));
        }
        if (edge(p)) {
          store_span_edge(reinterpret_cast<T*>(yr + at(p)), out, -column0(p), width - column0(p));
        } else if constexpr (kSpan) {
          store_stream(yr + at(p), out);
        } else {
          store_y(yr + at(p), out, plain_y);
        }
      };
      if constexpr (kParamBatch == 1) {
        // 8 packs: each slot's loads inside its own branch (the same loop with
        // batches of one slot changes ptxas' allocation: more spills).
#pragma unroll
        for (int p = 0; p < kSlots; ++p) {
          const int j = lane + p * group;
          if (kFull || j < packs) {
            WPack wp;
            WPack bp;
            fetch(p, wp, bp);
            emit(p, wp, bp);
          }
        }
      } else {
#pragma unroll
        for (int p0 = 0; p0 < kSlots; p0 += kParamBatch) {
          WPack wp[kParamBatch];
          WPack bp[kParamBatch];
#pragma unroll
          for (int b = 0; b < kParamBatch; ++b) {
            const int j = lane + (p0 + b) * group;
            if (p0 + b < kSlots && (kFull || j < packs)) {
              fetch(p0 + b, wp[b], bp[b]);
            }
          }
#pragma unroll
          for (int b = 0; b < kParamBatch; ++b) {
            const int j = lane + (p0 + b) * group;
            if (p0 + b < kSlots && (kFull || j < packs)) {
              emit(p0 + b, wp[b], bp[b]);
            }
          }
        }
      }
    };
    using yes = std::true_type;
    using no = std::false_type;
    const bool has_weight = weight != nullptr;
    const bool has_bias = !kRms && bias != nullptr;
    if (!kLean && !kFull) {
      write(has_weight, has_bias);
    } else if (has_weight && has_bias) {
      write(yes{}, yes{});
    } else if (has_weight) {
      write(yes{}, no{});
    } else if (has_bias) {
      write(no{}, yes{});
    } else {
      write(no{}, no{});
    }
  }
  // No cluster barrier before leaving: every write into this CTA's shared
  // memory was counted on its mbarriers, whose last phase it waited for.
}

// Parameters for span rows: row s of a table holds the packs of the columns
// j * kVec - s .. j * kVec - s + kVec - 1 (zero outside the row), so a row that
// starts s elements into its first pack reads one aligned pack per parameter
// and pack, as aligned rows do. One thread per pack of each table.
template <typename W, int kVec>
__global__ void span_param_table_kernel(
    const W* __restrict__ weight,
    const W* __restrict__ bias,
    RawPack<W, kVec>* __restrict__ weight_table,
    RawPack<W, kVec>* __restrict__ bias_table,
    int cols,
    int stride) {
  using P = RawPack<W, kVec>;
  const int index = blockIdx.x * blockDim.x + threadIdx.x;
  if (index >= kVec * stride) {
    return;
  }
  const int c0 = (index % stride) * kVec - index / stride;
  const W* const params[2] = {weight, bias};
  P* const tables[2] = {weight_table, bias_table};
#pragma unroll
  for (int which = 0; which < 2; ++which) {
    if (params[which] != nullptr) {
      P pack = load_span_param(reinterpret_cast<const P*>(params[which]), c0, cols);
      pack.keep(-c0, cols - c0);
      tables[which][index] = pack;
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
  at::TensorOptions options;
};

// Rows wider than the register kernel holds: read twice, one row per CTA.
template <typename T, typename W, int kVec>
void launch_norm_fwd_uncached(const FwdArgs<T, W>& a) {
  auto kernel = norm_fwd_uncached_kernel<T, W, kVec>;
  const int64_t grid = std::min(a.rows, resident_blocks(kernel, kUncachedThreads, 0));
  kernel<<<grid, kUncachedThreads, 0, at::cuda::getCurrentCUDAStream()>>>(
      a.x, a.weight, a.bias, a.y, a.mean, a.rstd, a.rows, a.cols, a.eps, a.rms);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// Launches the register forward (kSpan: rows of a width that is not a multiple
// of kVec); false when the row does not fit in the registers of the largest
// cluster.
template <typename T, typename W, int kVec, bool kSpan>
bool launch_rows_fwd(const FwdArgs<T, W>& a) {
  // A span covers at most two packs more than N / kVec.
  const int64_t num_packs = a.cols / kVec + (kSpan ? 2 : 0);
  // kRowTargetPacks packs per thread on at most kRowMaxThreads threads, so
  // several CTAs share an SM, for rows of up to kRowWidePacks packs (4-pack
  // rows load a batch of parameter packs at once, 8-pack rows one at a time);
  // then kRowMaxPacks, on up to 1024 threads; wider rows are split over a
  // cluster of kRowMaxThreads-thread CTAs at kRowMaxPacks. Rows with both
  // weight and bias split from kSplitPacks packs on, into slices of at most
  // kSplitSlicePacks: each CTA then reads only its slice of the two parameter
  // vectors, which the L2 -> SM path otherwise carries for every row.
  StagedConfig c;
  const bool two_params = !a.rms && a.weight != nullptr && a.bias != nullptr;
  const int64_t per_cta = two_params ? kSplitSlicePacks : static_cast<int64_t>(kRowMaxThreads) * kRowMaxPacks;
  if (num_packs > (two_params ? kSplitPacks : static_cast<int64_t>(kMaxThreadsPerRow) * kRowMaxPacks)) {
    while (c.cluster < max_cluster_size() && ceil_div(num_packs, c.cluster) > per_cta) {
      c.cluster *= 2;
    }
  }
  c.slice_packs = ceil_div(num_packs, c.cluster);
  // Threads for the slice's aligned packs; a span's two more packs take the
  // kernel's extra slot (with two threads or more), else they count in.
  auto config = [&](int64_t packs) {
    const bool wide = packs > kRowWidePacks || c.cluster > 1;
    const RowConfig cfg = choose_row_config(packs, wide ? kRowMaxPacks : kRowTargetPacks, kRowMaxThreads);
    return cfg.packs_per_thread > kRowMaxPacks ? choose_row_config(packs, kRowMaxPacks, kMaxThreadsPerRow) : cfg;
  };
  RowConfig cfg = config(kSpan ? std::max<int64_t>(c.slice_packs - 2, 1) : c.slice_packs);
  if (kSpan && cfg.threads_per_row < 2) {
    cfg = config(c.slice_packs);
  }
  if (cfg.packs_per_thread > kRowMaxPacks) {
    return false;
  }
  // Calls of one wave or less (few rows, as at decode time) are latency-bound:
  // kFewRowPacks packs a thread (more threads, shorter chains of adds each),
  // weight and bias loaded with x (one round trip to L2 a call instead of
  // two; the registers cost occupancy, which such a call does not use).
  // Rows per CTA without a cluster.
  auto groups = [](const RowConfig& r) { return std::max(r.threads_per_row, kRowBlockThreads) / r.threads_per_row; };
  const bool one_wave = !kSpan && c.cluster == 1 &&
                        ceil_div(a.rows, groups(cfg)) <= at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  if (one_wave) {
    const RowConfig few = choose_row_config(c.slice_packs, kFewRowPacks, kRowMaxThreads);
    cfg = few.packs_per_thread <= cfg.packs_per_thread ? few : cfg;
  }
  c.threads_per_row = cfg.threads_per_row;
  c.groups = c.cluster > 1 ? 1 : groups(cfg);
  const int64_t clusters = ceil_div(a.rows, c.groups);
  // Span rows read weight and bias from tables of kVec shifted copies.
  const int stride = static_cast<int>(num_packs);
  const W* weight = a.weight;
  const W* bias = a.bias;
  at::Tensor tables;
  if (kSpan && (weight != nullptr || bias != nullptr)) {
    using P = RawPack<W, kVec>;
    const int64_t table_packs = static_cast<int64_t>(kVec) * stride;
    tables = at::empty({2 * table_packs * static_cast<int64_t>(sizeof(P))}, a.options.dtype(at::kByte));
    P* weight_table = weight != nullptr ? reinterpret_cast<P*>(tables.mutable_data_ptr()) : nullptr;
    P* bias_table = bias != nullptr ? reinterpret_cast<P*>(tables.mutable_data_ptr()) + table_packs : nullptr;
    constexpr int kTableThreads = 256;
    span_param_table_kernel<W, kVec>
        <<<ceil_div(table_packs, kTableThreads), kTableThreads, 0, at::cuda::getCurrentCUDAStream()>>>(
            weight, bias, weight_table, bias_table, static_cast<int>(a.cols), stride);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    weight = reinterpret_cast<const W*>(weight_table);
    bias = reinterpret_cast<const W*>(bias_table);
  }
  // y is stored plainly when x and y overflow the L2 anyway (0.2-1.2 % faster
  // at 256 MiB and more); in smaller calls evict-first keeps x in L2 for the
  // backward or a next call (H100, float32 1024x4096: 7.85 -> 6.9 us).
  const bool plain_y =
      2 * a.rows * a.cols * static_cast<int64_t>(sizeof(T)) > at::cuda::getCurrentDeviceProperties()->l2CacheSize;
  auto launch = [&](auto kernel) {
    launch_staged(
        kernel, c, clusters, a.x, weight, bias, a.y, a.mean, a.rstd, a.rows, static_cast<int>(a.cols),
        c.threads_per_row, c.cluster, static_cast<int>(c.slice_packs), stride, a.eps, plain_y);
  };
  // Every slot of every thread holds a pack of the row (see kFull). Besides the
  // fixed groups, the unbounded kernels serve LayerNorm rows with parameters
  // of x's type (one reduction for mean and variance, kMoments) in one-wave
  // calls (0.1 us less a call; at up to 4 packs a thread in larger calls, 0-0.7
  // % slower), and rows of 8 packs for 16-bit x, the issue-bound case (ncu,
  // H200; float32 rows, half the elements a byte, gained nothing there).
  // RMSNorm has one reduction either way and gained nothing.
  constexpr bool kFullPacks8 = sizeof(T) == 2 && std::is_same_v<W, T>;
  const bool full = sizeof(W) == sizeof(T) && !kSpan &&
                    static_cast<int64_t>(cfg.threads_per_row) * cfg.packs_per_thread * c.cluster == num_packs;
  BOOL_SWITCH(a.rms, kRms, [&] {
    if (c.cluster > 1) {
      // A cluster slice is wider than kRowMaxThreads * kRowMaxPacks / 2 packs:
      // always 8 per thread.
      TORCH_CHECK(
          cfg.packs_per_thread == kRowMaxPacks && cfg.threads_per_row >= 32,
          "reference_ops: internal error, cluster slice of ", c.slice_packs, " packs");
      if constexpr (!kSpan && !kRms && kFullPacks8) {
        if (full) {
          launch(norm_fwd_rows_kernel<T, W, kVec, kRowMaxPacks, kRms, true, false, true, 0>);
          return;
        }
      }
      launch(norm_fwd_rows_kernel<T, W, kVec, kRowMaxPacks, kRms, true, kSpan, false, 0>);
      return;
    }
    // Rows of exactly kRowTargetPacks packs a thread on 8, 16 or 32 threads
    // (16-bit N = 256, 512, 1024; float N = 128, 256, 512), parameters of x's
    // type (wider ones spill): the group is fixed at compile time.
    if constexpr (!kSpan && sizeof(W) == sizeof(T)) {
      if (full && cfg.packs_per_thread == kRowTargetPacks) {
        switch (cfg.threads_per_row) {
          case 8:
            launch(norm_fwd_rows_kernel<T, W, kVec, kRowTargetPacks, kRms, false, false, true, 8>);
            return;
          case 16:
            launch(norm_fwd_rows_kernel<T, W, kVec, kRowTargetPacks, kRms, false, false, true, 16>);
            return;
          case 32:
            launch(norm_fwd_rows_kernel<T, W, kVec, kRowTargetPacks, kRms, false, false, true, 32>);
            return;
          default:
            break;
        }
      }
    }
    packs_switch(cfg.packs_per_thread, [&](auto p) {
      constexpr int kPacks = decltype(p)::value;
      constexpr bool kLeanLayerNorm = !kSpan && !kRms && std::is_same_v<W, T> && kPacks <= kRowTargetPacks;
      if constexpr (kLeanLayerNorm) {
        if (one_wave) {
          if (full) {
            launch(norm_fwd_rows_kernel<T, W, kVec, kPacks, kRms, false, false, true, 0, true>);
          } else {
            launch(norm_fwd_rows_kernel<T, W, kVec, kPacks, kRms, false, false, false, 0, true>);
          }
          return;
        }
      }
      if constexpr (!kSpan && !kRms && kFullPacks8 && kPacks == kRowMaxPacks) {
        if (full) {
          launch(norm_fwd_rows_kernel<T, W, kVec, kPacks, kRms, false, false, true, 0>);
          return;
        }
      }
      launch(norm_fwd_rows_kernel<T, W, kVec, kPacks, kRms, false, kSpan, false, 0>);
    });
  });
  return true;
}

// The one place that picks a kernel: with 16-byte-aligned pointers the register
// forward (16-byte packs; row spans when N is not a multiple of the pack), else
// (or for rows wider than its largest cluster) the uncached kernel.
template <typename T, typename W>
void dispatch_norm_fwd(const FwdArgs<T, W>& a) {
  constexpr int kVec = kPackBytes / sizeof(T);
  const bool aligned = is_aligned(a.x, kPackBytes) && is_aligned(a.y, kPackBytes) &&
                       is_aligned(a.weight, sizeof(W) * kVec) && is_aligned(a.bias, sizeof(W) * kVec);
  const bool launched =
      aligned && (a.cols % kVec == 0 ? launch_rows_fwd<T, W, kVec, false>(a) : launch_rows_fwd<T, W, kVec, true>(a));
  if (launched) {
    return;
  }
  if (aligned && a.cols % kVec == 0) {
    launch_norm_fwd_uncached<T, W, kVec>(a);
  } else {
    launch_norm_fwd_uncached<T, W, 1>(a);
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
      rstd.defined() ? rstd.mutable_data_ptr<acc_t>() : nullptr,
      shape.rows,
      shape.cols,
      static_cast<acc_t>(eps),
      rms,
      x.options()};
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
  m.impl(
      "layer_norm_fwd", [](const at::Tensor& x, c10::IntArrayRef shape, const std::optional<at::Tensor>& w,
                           const std::optional<at::Tensor>& b,
                           double eps) { return layer_norm_fwd(x, shape, w, b, eps, cuda::norm_fwd_cuda); });
  m.impl(
      "rms_norm_fwd", [](const at::Tensor& x, c10::IntArrayRef shape, const std::optional<at::Tensor>& w, double eps) {
        return rms_norm_fwd(x, shape, w, eps, cuda::norm_fwd_cuda);
      });
  m.impl(
      "layer_norm_inference", [](const at::Tensor& x, c10::IntArrayRef shape, const std::optional<at::Tensor>& w,
                                 const std::optional<at::Tensor>& b, double eps) {
        return std::get<0>(layer_norm_fwd(x, shape, w, b, eps, cuda::norm_fwd_cuda, /*stats=*/false));
      });
  m.impl(
      "rms_norm_inference",
      [](const at::Tensor& x, c10::IntArrayRef shape, const std::optional<at::Tensor>& w, double eps) {
        return std::get<0>(rms_norm_fwd(x, shape, w, eps, cuda::norm_fwd_cuda, /*stats=*/false));
      });
}

} // namespace reference_ops
