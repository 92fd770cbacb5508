// CUDA forward of reference_ops::layer_norm_fwd / rms_norm_fwd and the inference ops: the
// kernels, and the launch of the variant that plan_fwd (norm_plan.cpp) picks.
//
// One kernel family serves both norms (RMSNorm is LayerNorm without centring and bias):
//   * norm_fwd_rows_kernel, one instantiation per register variant of norm_plan.h (16-byte
//     packs; for N not a multiple of the pack, the packs of the tensor that cover each row): a
//     plain grid of CTAs, the row in registers (all of a thread's loads in flight at once), the
//     exact two-pass statistics (mean = sum(x)/N, var = sum((x-mean)^2)/N) and the output from the
//     same registers; rows wider than one CTA holds are split over a thread-block cluster (sm_90).
//   * norm_fwd_uncached_kernel: pointers that are not 16-byte aligned, and rows beyond the
//     register kernel's largest cluster: read twice, with shifted sums (Chan, Golub & LeVeque
//     1983: sums of x - x[0] and (x - x[0])^2).

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

// -----------------------------------------------------------------------------
// Kernels
// -----------------------------------------------------------------------------

template <typename scalar_t, typename weight_t, int kVec>
__global__ void __launch_bounds__(kUncachedThreads, 1)
    norm_fwd_uncached_kernel(const scalar_t* __restrict__ x, const weight_t* __restrict__ weight,
                             const weight_t* __restrict__ bias, scalar_t* __restrict__ y,
                             at::opmath_type<scalar_t>* __restrict__ mean_out,
                             at::opmath_type<scalar_t>* __restrict__ rstd_out, int64_t rows, int64_t cols,
                             at::opmath_type<scalar_t> eps, bool rms) {
  using acc_t = at::opmath_type<scalar_t>;
  __shared__ acc_t scratch[2 * kMaxWarps];
  const int64_t num_packs = cols / kVec;
  const acc_t inv_cols = acc_t(1) / static_cast<acc_t>(cols);

  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const scalar_t* xr = x + row * cols;
    const acc_t shift = rms ? acc_t(0) : static_cast<acc_t>(xr[0]);
    acc_t s1 = acc_t(0);
    acc_t s2 = acc_t(0);
#pragma unroll 4
    for (int64_t idx = threadIdx.x; idx < num_packs; idx += blockDim.x) {
      const Pack<scalar_t, kVec> xp = load_pack<scalar_t, kVec>(xr, idx);
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
    scalar_t* yr = y + row * cols;
#pragma unroll 4
    for (int64_t idx = threadIdx.x; idx < num_packs; idx += blockDim.x) {
      const Pack<scalar_t, kVec> xp = load_pack<scalar_t, kVec>(xr, idx);
      Pack<weight_t, kVec> wp;
      Pack<weight_t, kVec> bp;
      if (weight != nullptr) {
        wp = load_pack<weight_t, kVec>(weight, idx);
      }
      if (bias != nullptr) {
        bp = load_pack<weight_t, kVec>(bias, idx);
      }
      Pack<scalar_t, kVec> yp;
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        acc_t v = (static_cast<acc_t>(xp.v[k]) - mean) * rstd;
        if (weight != nullptr) {
          v *= static_cast<acc_t>(wp.v[k]);
        }
        if (bias != nullptr) {
          v += static_cast<acc_t>(bp.v[k]);
        }
        yp.v[k] = static_cast<scalar_t>(v);
      }
      store_pack<scalar_t, kVec>(yr, idx, yp);
    }
  }
}

// The compile-time shape of one instantiation of norm_fwd_rows_kernel: the variant's traits
// (norm_plan.h) and what follows from them and the dtypes.
template <typename scalar_t_, typename weight_t_, FwdVariant kVariant, Norm kNorm, int kPacks_>
struct RowsKernel {
  using scalar_t = scalar_t_;
  using weight_t = weight_t_;
  using acc_t = at::opmath_type<scalar_t>;
  static constexpr int kPacks = kPacks_;
  static constexpr int kVec = kPackBytes / sizeof(scalar_t);
  static constexpr bool kRms = kNorm == Norm::kRms;
  static constexpr bool kCluster = fwd_traits(kVariant).cluster;
  static constexpr bool kSpan = fwd_traits(kVariant).span;
  // kFull: aligned rows of exactly cluster x threads_per_row x kPacks packs, so every slot holds a
  // pack of the row: no bounds per slot or element, the lane in the pointers (immediate offsets),
  // weight / bias presence decided once. kGroup > 0 (narrow rows, on kGroup threads, a warp or
  // less): the group is fixed at compile time too, hence N and 1 / N, the butterfly, and x is
  // kept as floats: fewer instructions issued, which is what limits such narrow rows (not DRAM).
  static constexpr bool kFull = fwd_traits(kVariant).full;
  static constexpr int kGroup = fwd_traits(kVariant).group;
  static constexpr bool kEarly = fwd_traits(kVariant).early;
  static constexpr bool kFixed = kGroup > 0;
  static_assert(!kFull || !kSpan, "full rows are aligned rows");
  static_assert(!kFixed || (kFull && !kCluster && kGroup <= kWarpSize), "fixed groups: narrow rows");
  using XPack = RawPack<scalar_t, kVec>;
  using WPack = RawPack<weight_t, kVec>;
  // A span's one or two packs beyond the aligned width take one more slot.
  static constexpr int kSlots = kPacks + (kSpan ? 1 : 0);
  // Up to 4 packs a thread has registers to spare under the 64-register cap: the passes then
  // spend fewer instructions per element (at 8 packs the same forms make ptxas spill).
  static constexpr bool kLean = kPacks <= 4;
  // Full LayerNorm rows: every thread holds as many elements, so the mean and the variance come
  // from one reduction of each thread's sum and M2 about its own mean (MomentsCombine; two
  // reductions otherwise, the second after the mean). 8-pack rows do not also load weight / bias
  // with x: beside the two moments, ptxas would spill them.
  static constexpr bool kMoments = !kRms && kFull;
  // RMSNorm rows of up to 4 packs a thread load the weight packs with x (registers to spare), so
  // the output pass does not wait for a second round trip, the whole latency of a call of a few
  // rows (LayerNorm's weight and bias together would spill). kEarly (LayerNorm calls of one wave
  // or less, where occupancy does not count): weight and bias too, under a 128-register cap.
  static_assert(!kEarly || (kLean && !kRms && !kCluster && !kSpan && sizeof(weight_t) == sizeof(scalar_t)),
                "early parameters");
  static constexpr bool kEarlyWeight = (kRms || kEarly) && kLean && sizeof(weight_t) == sizeof(scalar_t);
  // The passes unpack the same words in three forms (RawPack::get), so that ptxas converts them
  // again instead of keeping 8 packs of floats; a fixed group keeps its 4 packs as floats (one
  // form), and so do the bounded float16 kernels (three forms there add instructions and remove no
  // spill).
  static constexpr bool kOneForm = kFixed || (std::is_same_v<scalar_t, c10::Half> && !kFull);
  static constexpr int kForm1 = kOneForm ? 0 : 1;
  static constexpr int kForm2 = kOneForm ? 0 : 2;
  using Scratch = ReduceScratch<acc_t, kMoments ? 2 : 1, (kCluster ? kMaxClusterSize : 1) * kMaxWarps>;
};

// Where a thread's slots lie: slot p holds pack lane + p * group of the row's slice (the slice of
// `packs` packs from pack0; the whole row without a cluster). Full rows keep the lane in the
// pointers (`at` is then a fixed offset; the other kernels keep the lane in the index, which ptxas
// allocates better for them).
template <typename K>
struct RowSlots {
  // References to the kernel's values (they are set in turn as the kernel starts).
  const int& lane;
  const int& group;
  const int& pack0;
  const int& packs;
  const int& lane_in_ptr;
  const int& width;
  const RowSpan& span;
  const unsigned& edges;  // bit p: slot p holds one of the row's edge packs (spans)

  __device__ __forceinline__ int at(int p) const { return lane - lane_in_ptr + p * group; }
  // Span packs: element e of slot p is column column0(p) + e; a row's first and last packs are its
  // edges, which hold elements of the neighbouring rows.
  __device__ __forceinline__ int column0(int p) const { return (pack0 + lane + p * group) * K::kVec - span.shift; }
  __device__ __forceinline__ bool edge(int p) const { return K::kSpan && ((edges >> p) & 1u) != 0; }
};

// Weight (and with kEarly, bias) packs loaded together with x.
template <typename K>
__device__ __forceinline__ void load_early_params(const RowSlots<K>& s, bool ok, const typename K::weight_t* weight,
                                                  const typename K::weight_t* bias, int param_stride,
                                                  typename K::WPack (&w_early)[K::kEarlyWeight ? K::kSlots : 1],
                                                  typename K::WPack (&b_early)[K::kEarly ? K::kSlots : 1]) {
  using WPack = typename K::WPack;
  const int param0 = s.span.shift * param_stride + s.pack0 + s.lane_in_ptr;
  const WPack* w0 = reinterpret_cast<const WPack*>(weight) + param0;
#pragma unroll
  for (int p = 0; p < K::kSlots; ++p) {
    const int j = s.lane + p * s.group;
    const bool in_row = ok && (K::kFull || j < s.packs);
    // ptxas keeps these loads beside x's as a branch in the fixed groups and as predicated loads
    // elsewhere (each the other way: after x arrived).
    if constexpr (K::kFixed) {
      if (weight != nullptr && in_row) {
        w_early[p] = load_param(w0 + s.at(p));
      }
    } else {
      w_early[p] = load_param_if(w0 + s.at(p), weight != nullptr && in_row);
    }
    if constexpr (K::kEarly) {
      b_early[p] = load_param_if(reinterpret_cast<const WPack*>(bias) + param0 + s.at(p), bias != nullptr && in_row);
    }
  }
}

// The thread's packs of x, all loads in flight at once (zeros in slots past the row), then the edge
// packs of a span masked (a mask between two loads would hold the later ones back until the first
// arrived).
template <typename K>
__device__ __forceinline__ void load_x(const RowSlots<K>& s, bool ok, const typename K::XPack* xr, const TailPack& tail,
                                       typename K::XPack (&xp)[K::kSlots]) {
#pragma unroll
  for (int p = 0; p < K::kSlots; ++p) {
    const int j = s.lane + p * s.group;
    if (ok && (K::kFull || j < s.packs)) {
      // Read once, yet not evict-first: the backward or a next call may still find x in L2.
      if (K::kSpan && j == tail.index) {
        xp[p].load_elems(reinterpret_cast<const typename K::scalar_t*>(xr + s.at(p)), tail.elems);
      } else {
        xp[p] = load_row(xr + s.at(p));
      }
    } else {
      xp[p].zero();
    }
  }
}

template <typename K>
__device__ __forceinline__ void mask_edges(const RowSlots<K>& s, typename K::XPack (&xp)[K::kSlots]) {
#pragma unroll
  for (int p = 0; p < K::kSlots; ++p) {
    if (s.edge(p)) {
      xp[p].keep(-s.column0(p), s.width - s.column0(p));
    }
  }
}

// The row's mean (0 for RMSNorm) and variance (mean square for RMSNorm), the same bits on every
// thread of the row.
template <typename K>
__device__ __forceinline__ void row_statistics(const RowSlots<K>& s, const typename K::XPack (&xp)[K::kSlots],
                                               int cluster, typename K::Scratch& scratch, typename K::acc_t& mean,
                                               typename K::acc_t& var) {
  using acc_t = typename K::acc_t;
  constexpr int kVec = K::kVec;
  constexpr int kSlots = K::kSlots;
  int reduce_calls = 0;
  if constexpr (K::kCluster) {
    row_reduce_init(scratch, cluster);
  }
  const acc_t inv_cols = acc_t(1) / static_cast<acc_t>(s.width);
  if constexpr (K::kMoments) {
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
        const acc_t d = xp[p].template get<K::kForm1>(e) - local_mean;
        m[1] += d * d;
      }
    }
    row_reduce(m, s.group, cluster, scratch, reduce_calls, MomentsCombine<acc_t>{acc_t(0.5) / kElems});
    mean = m[0] * inv_cols;
    var = m[1] * inv_cols;
  } else {
    if constexpr (!K::kRms) {
      acc_t sum[1] = {acc_t(0)};
#pragma unroll
      for (int p = 0; p < kSlots; ++p) {
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          sum[0] += xp[p].get(e);
        }
      }
      row_reduce(sum, s.group, cluster, scratch, reduce_calls);
      mean = sum[0] * inv_cols;
    }
    acc_t sq[1] = {acc_t(0)};
#pragma unroll
    for (int p = 0; p < kSlots; ++p) {
      const bool in_row = K::kFull || s.lane + p * s.group < s.packs;
      if (!K::kRms && s.edge(p)) {
        // Masked elements are zero: with a mean to subtract they must be left out.
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          const bool in = e >= -s.column0(p) && e < s.width - s.column0(p);
          const acc_t d = in ? xp[p].template get<K::kForm1>(e) - mean : acc_t(0);
          sq[0] += d * d;
        }
      } else if (K::kLean) {
        // One select per pack (slots past the row hold zeros, not x - mean).
        acc_t part = acc_t(0);
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          const acc_t d = xp[p].template get<K::kForm1>(e) - mean;
          part += d * d;
        }
        sq[0] += in_row ? part : acc_t(0);
      } else {
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          const acc_t d = in_row ? xp[p].template get<K::kForm1>(e) - mean : acc_t(0);
          sq[0] += d * d;
        }
      }
    }
    row_reduce(sq, s.group, cluster, scratch, reduce_calls);
    var = sq[0] * inv_cols;
  }
}

// y = (x - mean) * rstd * weight + bias from the thread's packs. has_weight / has_bias: bool, or
// std::bool_constant to drop what is absent at compile time (a missing factor is 1 and a missing
// term -0, which leave the value unchanged).
template <typename K, typename HasWeight, typename HasBias>
__device__ __forceinline__ void write_y(const RowSlots<K>& s, const typename K::XPack (&xp)[K::kSlots],
                                        typename K::XPack* yr, const typename K::WPack* wr, const typename K::WPack* br,
                                        const typename K::WPack (&w_early)[K::kEarlyWeight ? K::kSlots : 1],
                                        const typename K::WPack (&b_early)[K::kEarly ? K::kSlots : 1],
                                        typename K::acc_t mean, typename K::acc_t rstd, typename K::acc_t neg_mean_rstd,
                                        bool plain_y, HasWeight has_weight, HasBias has_bias) {
  using acc_t = typename K::acc_t;
  using scalar_t = typename K::scalar_t;
  using XPack = typename K::XPack;
  using WPack = typename K::WPack;
  constexpr int kVec = K::kVec;
  constexpr int kSlots = K::kSlots;
  // 16-bit LayerNorm: (x - mean) * rstd as one FMA, x * rstd + neg_mean_rstd (its rounding,
  // 2^-24 * |mean| * rstd, is far under the output's).
  constexpr bool kFold = (K::kLean || K::kFull) && sizeof(scalar_t) == 2 && !K::kRms;
  // Rows of up to 4 packs a thread load the weight / bias packs of kParamBatch slots before using
  // any: one round trip to L2 per batch instead of one per slot (the whole write pass waited on
  // each in turn). Up to 32 registers of them; 16 beside a span row's bookkeeping, and for float16,
  // whose passes ptxas converts once and keeps (more spills). At 8 packs a second slot's parameters
  // do not fit (ptxas spills).
  constexpr int kParamRegs = (K::kRms ? 1 : 2) * static_cast<int>(sizeof(WPack)) / 4;
  constexpr int kParamBudget = K::kSpan || std::is_same_v<scalar_t, c10::Half> ? 16 : 32;
  constexpr int kParamBatch = K::kLean ? std::max(1, std::min(kSlots, kParamBudget / kParamRegs)) : 1;
  auto fetch = [&](int p, WPack& wp, WPack& bp) {
    if constexpr (K::kEarlyWeight) {
      wp = w_early[p];
    } else if (has_weight) {
      wp = load_param(wr + s.at(p));
    }
    if constexpr (K::kEarly) {
      bp = b_early[p];
    } else if (has_bias) {
      bp = load_param(br + s.at(p));
    }
  };
  auto emit = [&](int p, const WPack& wp, const WPack& bp) {
    auto value = [&](int e) {
      const acc_t xv = xp[p].template get<K::kForm2>(e);
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
    if (s.edge(p)) {
      store_span_edge(reinterpret_cast<scalar_t*>(yr + s.at(p)), out, -s.column0(p), s.width - s.column0(p));
    } else if constexpr (K::kSpan) {
      store_stream(yr + s.at(p), out);
    } else {
      store_y(yr + s.at(p), out, plain_y);
    }
  };
  if constexpr (kParamBatch == 1) {
    // 8 packs: each slot's loads inside its own branch (the same loop with batches of one slot
    // changes ptxas' allocation: more spills).
#pragma unroll
    for (int p = 0; p < kSlots; ++p) {
      const int j = s.lane + p * s.group;
      if (K::kFull || j < s.packs) {
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
        const int j = s.lane + (p0 + b) * s.group;
        if (p0 + b < kSlots && (K::kFull || j < s.packs)) {
          fetch(p0 + b, wp[b], bp[b]);
        }
      }
#pragma unroll
      for (int b = 0; b < kParamBatch; ++b) {
        const int j = s.lane + (p0 + b) * s.group;
        if (p0 + b < kSlots && (K::kFull || j < s.packs)) {
          emit(p0 + b, wp[b], bp[b]);
        }
      }
    }
  }
}

// Register forward (16-byte packs): a plain grid of CTAs, one row per row group; each thread
// issues all of its kPacks loads at once and keeps the packs (as raw words of scalar_t) in registers for
// the exact two-pass statistics (mean = sum(x)/N, var = sum((x-mean)^2)/N) and the output; x,
// weight and bias come through the read-only cache, weight and bias evict-last in L2
// (load_param). Several CTAs per SM overlap one row's reductions with the others' memory traffic.
// Rows wider than one CTA holds are split over a thread-block cluster (sm_90): CTA `rank` takes
// the slice of `slice_packs` packs starting at rank * slice_packs, and the sums meet through
// distributed shared memory. kSpan: N is not a multiple of kVec, and each row is the span of the
// tensor's packs that covers it (RowSpan): edge packs are masked on load and written element by
// element, weight and bias are the tables of span_param_table_kernel (one pack-aligned copy per
// shift, row `shift` of `param_stride` packs), and the span's one or two packs beyond the aligned
// width take one more slot (used by lanes 0 and 1 only), so a span row is spread over threads like
// an aligned row of its width. The variant (norm_plan.h) fixes the rest at compile time (RowsKernel).
template <typename scalar_t, typename weight_t, FwdVariant kVariant, Norm kNorm, int kPacks>
__global__ void __launch_bounds__(fwd_traits(kVariant).early ? kRowMaxThreads : kMaxThreadsPerRow, 1)
    norm_fwd_rows_kernel(const scalar_t* __restrict__ x, const weight_t* __restrict__ weight,
                         const weight_t* __restrict__ bias, scalar_t* __restrict__ y,
                         at::opmath_type<scalar_t>* __restrict__ mean_out,
                         at::opmath_type<scalar_t>* __restrict__ rstd_out, int64_t rows, int cols, int threads_per_row,
                         int cluster_size, int slice_packs, int param_stride, at::opmath_type<scalar_t> eps,
                         bool plain_y) {
  static_assert(fwd_rows_kernel_exists(kVariant, kNorm, kPacks, sizeof(scalar_t), sizeof(weight_t)),
                "a planned variant");
  using K = RowsKernel<scalar_t, weight_t, kVariant, kNorm, kPacks>;
  using acc_t = typename K::acc_t;
  using XPack = typename K::XPack;
  using WPack = typename K::WPack;
  constexpr int kVec = K::kVec;
  __shared__ typename K::Scratch scratch;

  // Geometry: the row of this thread's group, and its slots in the row (or the row's slice).
  const int group = K::kFixed ? K::kGroup : threads_per_row;
  const int width = K::kFixed ? K::kGroup * kPacks * kVec : cols;
  // Compile-time 1 without a cluster: the cluster code (and its registers) drops out.
  const int cluster = K::kCluster ? cluster_size : 1;
  const int lane = threadIdx.x & (group - 1);
  const int rank = K::kCluster ? static_cast<int>(cluster_rank()) : 0;
  const int group_shift = log2_pow2(group);
  const int64_t row =
      static_cast<int64_t>(blockIdx.x / cluster) * (blockDim.x >> group_shift) + (threadIdx.x >> group_shift);
  // Groups past the last row still take part in the reductions.
  const bool ok = row < rows;
  RowSpan span{(ok ? row : 0) * (width / kVec), 0, width / kVec};
  if constexpr (K::kSpan) {
    span = row_span<kVec>(ok ? row : 0, width);
  }
  const int pack0 = rank * slice_packs;
  const int left = span.packs - pack0;
  const int packs = K::kFull ? kPacks * group : left < slice_packs ? left : slice_packs;
  const int lane_in_ptr = K::kFull ? lane : 0;
  unsigned edges = 0;
  const RowSlots<K> s{lane, group, pack0, packs, lane_in_ptr, width, span, edges};
  const XPack* xr = reinterpret_cast<const XPack*>(x) + span.first + pack0 + lane_in_ptr;
  if constexpr (K::kSpan) {
#pragma unroll
    for (int p = 0; p < K::kSlots; ++p) {
      const bool in_row = lane + p * group < packs;
      edges |= in_row && (s.column0(p) < 0 || s.column0(p) + kVec > width) ? 1u << p : 0u;
    }
  }

  // Load: x, and the parameters that go with it (fixed groups issue those first: after x's,
  // ptxas scheduled them once x had arrived, a round trip later).
  WPack w_early[K::kEarlyWeight ? K::kSlots : 1];
  WPack b_early[K::kEarly ? K::kSlots : 1];
  if constexpr (K::kEarlyWeight && K::kFixed) {
    load_early_params(s, ok, weight, bias, param_stride, w_early, b_early);
  }
  const TailPack tail = K::kSpan ? tail_pack<kVec>(span.first + pack0, packs, rows * width) : TailPack{-1, 0};
  XPack xp[K::kSlots];
  load_x(s, ok, xr, tail, xp);
  if constexpr (K::kEarlyWeight && !K::kFixed) {
    load_early_params(s, ok, weight, bias, param_stride, w_early, b_early);
  }
  mask_edges(s, xp);

  // Reduce: the row's statistics.
  acc_t mean = acc_t(0);
  acc_t var = acc_t(0);
  row_statistics(s, xp, cluster, scratch, mean, var);
  const acc_t rstd = rsqrt_acc(var + eps);

  // Normalise and store.
  if (ok) {
    // The inference ops pass no statistics to write.
    if (lane == 0 && rank == 0 && rstd_out != nullptr) {
      if constexpr (!K::kRms) {
        mean_out[row] = mean;
      }
      rstd_out[row] = rstd;
    }
    XPack* yr = reinterpret_cast<XPack*>(y) + span.first + pack0 + lane_in_ptr;
    const int param0 = span.shift * param_stride + pack0 + lane_in_ptr;
    const WPack* wr = weight != nullptr ? reinterpret_cast<const WPack*>(weight) + param0 : nullptr;
    const WPack* br = bias != nullptr ? reinterpret_cast<const WPack*>(bias) + param0 : nullptr;
    const acc_t neg_mean_rstd = -mean * rstd;
    auto write = [&](auto has_weight, auto has_bias) {
      write_y(s, xp, yr, wr, br, w_early, b_early, mean, rstd, neg_mean_rstd, plain_y, has_weight, has_bias);
    };
    using yes = std::true_type;
    using no = std::false_type;
    const bool has_weight = weight != nullptr;
    const bool has_bias = !K::kRms && bias != nullptr;
    if (!K::kLean && !K::kFull) {
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
  // No cluster barrier before leaving: every write into this CTA's shared memory was counted on its
  // mbarriers, whose last phase it waited for.
}

// Parameters for span rows: row s of a table holds the packs of the columns
// j * kVec - s .. j * kVec - s + kVec - 1 (zero outside the row), so a row that
// starts s elements into its first pack reads one aligned pack per parameter
// and pack, as aligned rows do. One thread per pack of each table.
template <typename weight_t, int kVec>
__global__ void span_param_table_kernel(const weight_t* __restrict__ weight, const weight_t* __restrict__ bias,
                                        RawPack<weight_t, kVec>* __restrict__ weight_table,
                                        RawPack<weight_t, kVec>* __restrict__ bias_table, int cols, int stride) {
  using P = RawPack<weight_t, kVec>;
  const int index = blockIdx.x * blockDim.x + threadIdx.x;
  if (index >= kVec * stride) {
    return;
  }
  const int c0 = (index % stride) * kVec - index / stride;
  const weight_t* const params[2] = {weight, bias};
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
// Launch of a plan
// -----------------------------------------------------------------------------

template <typename scalar_t, typename weight_t>
struct FwdArgs {
  const scalar_t* x;
  const weight_t* weight;
  const weight_t* bias;
  scalar_t* y;
  at::opmath_type<scalar_t>* mean;
  at::opmath_type<scalar_t>* rstd;
  int64_t rows;
  int64_t cols;
  at::opmath_type<scalar_t> eps;
  bool rms;
  at::TensorOptions options;
};

// Rows wider than the register kernel holds, or unaligned: read twice, one row per CTA.
template <typename scalar_t, typename weight_t, int kVec>
void launch_norm_fwd_uncached(const FwdArgs<scalar_t, weight_t>& a) {
  auto kernel = norm_fwd_uncached_kernel<scalar_t, weight_t, kVec>;
  const int64_t grid = std::min(a.rows, resident_blocks(kernel, kUncachedThreads, 0));
  kernel<<<grid, kUncachedThreads, 0, at::cuda::getCurrentCUDAStream()>>>(a.x, a.weight, a.bias, a.y, a.mean, a.rstd,
                                                                          a.rows, a.cols, a.eps, a.rms);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// Calls f(norm_fwd_rows_kernel<scalar_t, weight_t, variant, norm, packs>) for the plan's register variant. Only
// the combinations of kFwdVariants are instantiated; false for any other (none is planned).
template <typename scalar_t, typename weight_t, typename F, int... kVariants>
bool with_rows_kernel(const FwdPlan& plan, F&& f, std::integer_sequence<int, kVariants...>) {
  bool found = false;
  auto try_one = [&](auto variant, auto norm, auto packs) {
    constexpr FwdVariant kVariant = decltype(variant)::value;
    constexpr Norm kNorm = decltype(norm)::value;
    constexpr int kPacks = decltype(packs)::value;
    if constexpr (fwd_rows_kernel_exists(kVariant, kNorm, kPacks, sizeof(scalar_t), sizeof(weight_t))) {
      if (plan.variant == kVariant && plan.norm == kNorm && plan.packs_per_thread == kPacks) {
        f(norm_fwd_rows_kernel<scalar_t, weight_t, kVariant, kNorm, kPacks>);
        found = true;
      }
    }
  };
  auto each_packs = [&](auto variant, auto norm) {
    try_one(variant, norm, std::integral_constant<int, 1>{});
    try_one(variant, norm, std::integral_constant<int, 2>{});
    try_one(variant, norm, std::integral_constant<int, 4>{});
    try_one(variant, norm, std::integral_constant<int, 8>{});
  };
  auto each_norm = [&](auto variant) {
    each_packs(variant, std::integral_constant<Norm, Norm::kLayerNorm>{});
    each_packs(variant, std::integral_constant<Norm, Norm::kRms>{});
  };
  (each_norm(std::integral_constant<FwdVariant, static_cast<FwdVariant>(kVariants)>{}), ...);
  return found;
}

// Launches a register variant: the span parameter tables first when the plan needs them.
template <typename scalar_t, typename weight_t>
void launch_norm_fwd_rows(const FwdPlan& plan, const FwdArgs<scalar_t, weight_t>& a) {
  constexpr int kVec = kPackBytes / sizeof(scalar_t);
  if (plan.cluster > 1) {
    // A cluster slice is wider than kRowMaxThreads * kRowMaxPacks / 2 packs: always 8 per thread.
    TORCH_CHECK(plan.packs_per_thread == kRowMaxPacks && plan.threads_per_row >= kWarpSize,
                "reference_ops: internal error, cluster slice of ", plan.slice_packs, " packs");
  }
  // Span rows read weight and bias from tables of kVec shifted copies.
  const weight_t* weight = a.weight;
  const weight_t* bias = a.bias;
  at::Tensor tables;
  if (plan.span_tables) {
    using P = RawPack<weight_t, kVec>;
    const int64_t table_packs = static_cast<int64_t>(kVec) * plan.param_stride;
    tables = at::empty({2 * table_packs * static_cast<int64_t>(sizeof(P))}, a.options.dtype(at::kByte));
    P* weight_table = weight != nullptr ? reinterpret_cast<P*>(tables.mutable_data_ptr()) : nullptr;
    P* bias_table = bias != nullptr ? reinterpret_cast<P*>(tables.mutable_data_ptr()) + table_packs : nullptr;
    constexpr int kTableThreads = 256;
    span_param_table_kernel<weight_t, kVec>
        <<<ceil_div(table_packs, kTableThreads), kTableThreads, 0, at::cuda::getCurrentCUDAStream()>>>(
            weight, bias, weight_table, bias_table, static_cast<int>(a.cols), plan.param_stride);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    weight = reinterpret_cast<const weight_t*>(weight_table);
    bias = reinterpret_cast<const weight_t*>(bias_table);
  }
  StagedConfig c;
  c.threads_per_row = plan.threads_per_row;
  c.groups = plan.groups;
  c.cluster = plan.cluster;
  c.slice_packs = plan.slice_packs;
  const bool launched = with_rows_kernel<scalar_t, weight_t>(
      plan,
      [&](auto kernel) {
        launch_staged(kernel, c, plan.clusters, a.x, weight, bias, a.y, a.mean, a.rstd, a.rows,
                      static_cast<int>(a.cols), plan.threads_per_row, plan.cluster, plan.slice_packs, plan.param_stride,
                      a.eps, plan.plain_y);
      },
      std::make_integer_sequence<int, kFwdVariantCount>{});
  TORCH_CHECK(launched, "reference_ops: internal error, no forward kernel for variant ", fwd_variant_name(plan.variant),
              " at ", plan.packs_per_thread, " packs per thread");
}

template <typename scalar_t, typename weight_t>
void launch_norm_fwd(const FwdArgs<scalar_t, weight_t>& a) {
  const FwdCall call{a.rows,
                     a.cols,
                     static_cast<int>(sizeof(scalar_t)),
                     static_cast<int>(sizeof(weight_t)),
                     a.rms ? Norm::kRms : Norm::kLayerNorm,
                     reinterpret_cast<uintptr_t>(a.x),
                     reinterpret_cast<uintptr_t>(a.y),
                     reinterpret_cast<uintptr_t>(a.weight),
                     reinterpret_cast<uintptr_t>(a.bias)};
  const FwdPlan plan = plan_fwd(call, device_limits());
  switch (plan.variant) {
    case FwdVariant::kUncached:
      launch_norm_fwd_uncached<scalar_t, weight_t, kPackBytes / sizeof(scalar_t)>(a);
      return;
    case FwdVariant::kUncachedElems:
      launch_norm_fwd_uncached<scalar_t, weight_t, 1>(a);
      return;
    default:
      launch_norm_fwd_rows(plan, a);
      return;
  }
}

}  // namespace

void norm_fwd(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, at::Tensor& y, at::Tensor& mean,
              at::Tensor& rstd, NormShape shape, double eps, bool rms) {
  if (shape.rows == 0) {
    return;
  }
  dispatch_types(x.scalar_type(), has_float_params(x, weight, bias), [&](auto t, auto w) {
    using scalar_t = decltype(t);
    using weight_t = decltype(w);
    using acc_t = at::opmath_type<scalar_t>;
    launch_norm_fwd<scalar_t, weight_t>(FwdArgs<scalar_t, weight_t>{
        x.const_data_ptr<scalar_t>(), weight.defined() ? weight.const_data_ptr<weight_t>() : nullptr,
        bias.defined() ? bias.const_data_ptr<weight_t>() : nullptr, y.mutable_data_ptr<scalar_t>(),
        mean.defined() ? mean.mutable_data_ptr<acc_t>() : nullptr,
        rstd.defined() ? rstd.mutable_data_ptr<acc_t>() : nullptr, shape.rows, shape.cols, static_cast<acc_t>(eps), rms,
        x.options()});
  });
}

}  // namespace cuda
}  // namespace reference_ops
