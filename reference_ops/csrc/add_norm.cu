// CUDA kernels of the fused residual ops (add_rms_norm / add_layer_norm): h = x + residual and
// y = norm(h) in one pass over memory, and their backward.
//
// A transformer block adds each sublayer's output x to the residual stream and normalises the sum
// for the next sublayer. Fused, the sum never makes a round trip through DRAM between the add and
// the norm: the forward reads x and residual once and writes h and y once; the backward reads dy,
// h and the gradient arriving at h (dh) once and writes the gradient of the sum once (and x's,
// when x's dtype is narrower than the residual stream's).
//
// The kernels' dtypes, as the template parameters name them: residual_t, the residual stream's
// (h's and its gradients'); scalar_t, x's: residual_t's, or a 16-bit dtype with a float32 stream
// (LLaMA-style models under autocast keep the stream in float32); weight_t, the parameters'
// (residual_t's, or float32 beside a 16-bit stream); out_t, y's (and so dy's): residual_t's, or x's
// beside a float32 stream (out_dtype: the next sublayer's dtype). Rows are held in registers:
// `threads_per_row` threads (a power of two) of `packs` 16-byte packs of residual_t each.
// plan_add_fwd / plan_add_bwd (norm_plan.cpp) pick the variant (kAddFwdVariants / kAddBwdVariants
// in norm_plan.h) and its launch shape; only the planned variants are built. Shapes these kernels
// do not take (kSeparate: widths not a multiple of residual_t's pack, pointers not aligned to
// their packs, rows wider than their registers hold) return false to the caller (norm.cpp), which
// then adds and normalises with the separate kernels.

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>

#include <algorithm>

#include "launch.cuh"
#include "norm.h"
#include "norm_plan.h"
#include "pack.cuh"
#include "reduce.cuh"

namespace reference_ops {
namespace cuda {
namespace {

// The launch limits (kAdd*, add_*) are norm_plan.h's, shared with the planner.

// Elements of a pack of residual_t (and of every tensor beside it).
template <typename residual_t>
constexpr int pack_elems() {
  return add_vec(static_cast<int>(sizeof(residual_t)));
}

// A pack of residual_t's element count in any dtype: x's (8 bytes for 16-bit x beside a float32 stream),
// weight's, the stream's own.
template <typename U, typename residual_t>
using PackOf = Pack<U, pack_elems<residual_t>()>;

template <typename P>
__device__ __forceinline__ P load_ro(const P* p) {
  return *p;  // const __restrict__ pointers: ptxas emits read-only (LDG.CONSTANT) loads
}

template <typename U, int N>
__device__ __forceinline__ void zero(Pack<U, N>& p) {
#pragma unroll
  for (int e = 0; e < N; ++e) {
    p.v[e] = U(0);
  }
}

template <typename U, int N>
__device__ __forceinline__ void zero(RawPack<U, N>& p) {
#pragma unroll
  for (auto& w : p.w) {
    w = 0u;  // +0.0 in every dtype
  }
}

// Where a thread's packs lie: slot p is pack lane + p * group of its row.
struct Slots {
  int lane;
  int group;
  int packs;  // packs in a row
  __device__ __forceinline__ int pack(int p) const { return lane + p * group; }
  __device__ __forceinline__ bool in_row(int p) const { return pack(p) < packs; }
};

template <typename residual_t>
using Scratch = ReduceScratch<at::opmath_type<residual_t>, 2, kMaxWarps>;

// Sums kN values over the row's threads (every thread of the CTA calls it, the same number of times).
template <int kN, typename U>
__device__ __forceinline__ void row_sums(U (&v)[kN], int group, ReduceScratch<U, 2, kMaxWarps>& scratch, int& calls) {
  if constexpr (kN == 1) {
    U pair[2] = {v[0], U(0)};
    row_reduce(pair, group, 1, scratch, calls);
    v[0] = pair[0];
  } else {
    row_reduce(v, group, 1, scratch, calls);
  }
}

// -----------------------------------------------------------------------------
// Forward
// -----------------------------------------------------------------------------

// One row per group of `threads_per_row` threads: load x and residual (all packs in flight), store
// h = x + residual rounded to residual_t and keep it (as the normalisation must see the h that is saved),
// then the row's statistics from registers (LayerNorm: mean, then the exact sum of squares about
// it) and y = (h - mean) * rstd * weight + bias. kFewRows (kEarly: calls of one wave or less, as at
// decode time, which are latency-bound; one or two packs a thread): weight and bias are loaded with
// x and residual, so the output waits for one round trip to memory instead of two; their registers
// cost occupancy, which such a call does not use.
template <typename scalar_t, typename residual_t, typename weight_t, typename out_t, Norm kNorm, int kPacks,
          AddFwdVariant kVariant>
__global__ void __launch_bounds__(add_fwd_traits(kVariant).max_threads, 1)
    add_norm_fwd_kernel(const scalar_t* __restrict__ x, const residual_t* __restrict__ residual,
                        const weight_t* __restrict__ weight, const weight_t* __restrict__ bias,
                        residual_t* __restrict__ h, out_t* __restrict__ y,
                        at::opmath_type<residual_t>* __restrict__ mean_out,
                        at::opmath_type<residual_t>* __restrict__ rstd_out, int64_t rows, int cols, int threads_per_row,
                        at::opmath_type<residual_t> inv_cols, at::opmath_type<residual_t> eps) {
  using acc_t = at::opmath_type<residual_t>;
  constexpr int kVec = pack_elems<residual_t>();
  constexpr bool kRms = kNorm == Norm::kRms;
  constexpr bool kEarly = add_fwd_traits(kVariant).early;
  static_assert(add_fwd_kernel_exists(kVariant, kPacks, sizeof(residual_t)),
                "a planned variant (a row slice in registers)");
  __shared__ Scratch<residual_t> scratch;

  // A row group is a power of two threads: its row by shifts. A division by the runtime group size
  // put ~35 dependent instructions ahead of the first load, and 1 / cols (from the host) ~10 ahead
  // of rstd: at decode sizes this kernel is all latency.
  const int group = threads_per_row;
  const int group_shift = __ffs(group) - 1;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x >> group_shift) + (threadIdx.x >> group_shift);
  const bool ok = row < rows;  // groups past the last row still take part in the reductions
  const Slots s{static_cast<int>(threadIdx.x) & (group - 1), group, cols / kVec};
  const int64_t first = (ok ? row : 0) * s.packs;
  const auto* xr = reinterpret_cast<const PackOf<scalar_t, residual_t>*>(x) + first;
  const auto* rr = reinterpret_cast<const PackOf<residual_t, residual_t>*>(residual) + first;

  const auto* wr = reinterpret_cast<const PackOf<weight_t, residual_t>*>(weight);
  const auto* br = reinterpret_cast<const PackOf<weight_t, residual_t>*>(bias);
  auto load_params = [&](int p, PackOf<weight_t, residual_t>& wp, PackOf<weight_t, residual_t>& bp) {
    if (weight != nullptr) {
      wp = load_ro(wr + s.pack(p));
    }
    if (bias != nullptr) {
      bp = load_ro(br + s.pack(p));
    }
  };

  // Load.
  PackOf<scalar_t, residual_t> xp[kPacks];
  PackOf<residual_t, residual_t> rp[kPacks];
  PackOf<weight_t, residual_t> wps[kEarly ? kPacks : 1];
  PackOf<weight_t, residual_t> bps[kEarly ? kPacks : 1];
#pragma unroll
  for (int p = 0; p < kPacks; ++p) {
    if (ok && s.in_row(p)) {
      xp[p] = load_ro(xr + s.pack(p));
      rp[p] = load_ro(rr + s.pack(p));
      if constexpr (kEarly) {
        load_params(p, wps[p], bps[p]);
      }
    } else {
      zero(xp[p]);
      zero(rp[p]);
    }
  }
  // Add, store h, keep it.
  acc_t v[kPacks][kVec];
  auto* hr = reinterpret_cast<PackOf<residual_t, residual_t>*>(h) + first;
#pragma unroll
  for (int p = 0; p < kPacks; ++p) {
    PackOf<residual_t, residual_t> hp;
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      hp.v[e] = static_cast<residual_t>(static_cast<acc_t>(xp[p].v[e]) + static_cast<acc_t>(rp[p].v[e]));
      v[p][e] = static_cast<acc_t>(hp.v[e]);
    }
    if (ok && s.in_row(p)) {
      hr[s.pack(p)] = hp;
    }
  }

  // Statistics. Slots past the row hold zeros: they add nothing to the sums, and are left out of
  // the sum of squares about the mean.
  int calls = 0;
  acc_t mean = acc_t(0);
  if constexpr (!kRms) {
    acc_t sum[1] = {acc_t(0)};
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        sum[0] += v[p][e];
      }
    }
    row_sums(sum, group, scratch, calls);
    mean = sum[0] * inv_cols;
  }
  acc_t sq[1] = {acc_t(0)};
#pragma unroll
  for (int p = 0; p < kPacks; ++p) {
    acc_t part = acc_t(0);
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      const acc_t d = v[p][e] - mean;
      part += d * d;
    }
    sq[0] += s.in_row(p) ? part : acc_t(0);
  }
  row_sums(sq, group, scratch, calls);
  const acc_t rstd = rsqrt_acc(sq[0] * inv_cols + eps);
  if (ok && s.lane == 0 && rstd_out != nullptr) {
    rstd_out[row] = rstd;
    if (mean_out != nullptr) {
      mean_out[row] = mean;
    }
  }

  // Normalise and store y.
  if (!ok) {
    return;
  }
  auto* yr = reinterpret_cast<PackOf<out_t, residual_t>*>(y) + first;
#pragma unroll
  for (int p = 0; p < kPacks; ++p) {
    if (!s.in_row(p)) {
      continue;
    }
    PackOf<weight_t, residual_t> wp;
    PackOf<weight_t, residual_t> bp;
    if constexpr (kEarly) {
      wp = wps[p];
      bp = bps[p];
    } else {
      load_params(p, wp, bp);
    }
    PackOf<out_t, residual_t> yp;
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      acc_t t = (v[p][e] - mean) * rstd;
      if (weight != nullptr) {
        t *= static_cast<acc_t>(wp.v[e]);
      }
      if (bias != nullptr) {
        t += static_cast<acc_t>(bp.v[e]);
      }
      yp.v[e] = static_cast<out_t>(t);
    }
    yr[s.pack(p)] = yp;
  }
}

// -----------------------------------------------------------------------------
// Backward
// -----------------------------------------------------------------------------

// The gradient of h = x + residual (both inputs get it; x's in its own dtype when narrower) from the
// norm's backward and the gradient that reaches h itself (dh, the residual stream's; may be absent):
//   xhat = (h - mean) * rstd,  g = dy * weight,
//   dh_total = rstd * (g - xhat * mean(g * xhat) - mean(g)) + dh     (RMSNorm: no mean(g) term).
// A persistent grid: each row group takes rows group, group + groups, ..., and sums dy * xhat and
// dy per column in registers; a CTA's groups add theirs into one row of `partial` ([grid, cols]),
// which column_sum_kernel (reduce.cuh) adds up into dweight / dbias. dy has y's dtype out_t (residual_t, or x's).
// A thread keeps its slices of dy, h and dh as loaded, as raw words (RawPack: a 16-bit pair in one
// register; the two passes unpack them in different forms, so ptxas does not keep the floats of the
// first across the reduction), all three loaded before the row's reduction so that they are in
// flight together, and computes xhat and g twice, for the row's sums and for the output (floats of
// xhat and g held across the reduction would take 16-32 more registers).
template <typename scalar_t, typename residual_t, typename weight_t, typename out_t, Norm kNorm, int kPacks>
__global__ void __launch_bounds__(kAddBwdMaxThreads, (add_bwd_min_blocks(sizeof(residual_t), kPacks)))
    add_norm_bwd_kernel(const out_t* __restrict__ dy, const residual_t* __restrict__ dh,
                        const residual_t* __restrict__ h, const at::opmath_type<residual_t>* __restrict__ mean,
                        const at::opmath_type<residual_t>* __restrict__ rstd, const weight_t* __restrict__ weight,
                        residual_t* __restrict__ dsum, scalar_t* __restrict__ dx,
                        at::opmath_type<residual_t>* __restrict__ partial_w,
                        at::opmath_type<residual_t>* __restrict__ partial_b, int64_t rows, int cols,
                        int threads_per_row) {
  using acc_t = at::opmath_type<residual_t>;
  constexpr int kVec = pack_elems<residual_t>();
  constexpr bool kRms = kNorm == Norm::kRms;
  // Slices kept as loaded, dh with them (see above); LayerNorm's widest float32 / float64 slices (64
  // bytes each), whose dbias sums leave no room for that (it spills), keep floats of xhat and g
  // instead and load dh after the wait. A 16-bit stream's two packs fit as raw words.
  constexpr bool kKeepPacks =
      kRms || sizeof(residual_t) == 2 || kPacks * kVec * static_cast<int>(sizeof(acc_t)) < kAddMaxAccBytes;
  static_assert(add_bwd_kernel_exists(AddBwdVariant::kRows, kPacks, sizeof(residual_t)),
                "a planned variant (a row slice in registers)");
  __shared__ Scratch<residual_t> scratch;
  // The CTA's column sums (dweight's, and dbias' for LayerNorm), one row per row group, added into
  // one partial row each at the end. Several groups share a CTA only in CTAs of kAddCtaThreads
  // threads; a thread takes more than add_bwd_target_packs packs only in rows of kAddBwdMaxThreads
  // threads, one group a CTA.
  constexpr bool kOneGroup = kPacks > add_bwd_target_packs(sizeof(residual_t));
  constexpr int kSums = kRms ? 1 : 2;
  __shared__ alignas(alignof(PackOf<acc_t, residual_t>))
      acc_t staging[kOneGroup ? 1 : kSums * kAddCtaThreads * kPacks * kVec];

  const int group = threads_per_row;
  const int groups_per_cta = blockDim.x / group;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * groups_per_cta;
  const Slots s{static_cast<int>(threadIdx.x) & (group - 1), group, cols / kVec};
  const acc_t inv_cols = acc_t(1) / static_cast<acc_t>(cols);
  const auto* wr = reinterpret_cast<const PackOf<weight_t, residual_t>*>(weight);
  const auto* dyr = reinterpret_cast<const RawPack<out_t, kVec>*>(dy);
  const auto* hr = reinterpret_cast<const RawPack<residual_t, kVec>*>(h);
  const auto* dhr = reinterpret_cast<const RawPack<residual_t, kVec>*>(dh);
  // g = dy * weight of slot p, element e (weight reloaded from L1 where needed).
  auto weigh = [&](const PackOf<weight_t, residual_t>& wp, int p, int e, acc_t d) {
    return weight != nullptr && s.in_row(p) ? d * static_cast<acc_t>(wp.v[e]) : d;
  };
  auto load_weight = [&](int p) {
    PackOf<weight_t, residual_t> wp;
    if (weight != nullptr && s.in_row(p)) {
      wp = load_ro(wr + s.pack(p));
    }
    return wp;
  };

  acc_t dw[kPacks][kVec];
  acc_t db[kRms ? 1 : kPacks][kVec];
#pragma unroll
  for (int p = 0; p < kPacks; ++p) {
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      dw[p][e] = acc_t(0);
      if constexpr (!kRms) {
        db[p][e] = acc_t(0);
      }
    }
  }
  int calls = 0;
  // The loop's bound is the CTA's (its first row group's), so every thread runs every reduction.
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * groups_per_cta; base < rows; base += stride) {
    const int64_t row = base + threadIdx.x / group;
    const bool ok = row < rows;
    const int64_t first = (ok ? row : 0) * s.packs;
    RawPack<out_t, kVec> dyp[kPacks];
    RawPack<residual_t, kVec> hp[kPacks];
    RawPack<residual_t, kVec> dhp[kPacks];
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      if (ok && s.in_row(p)) {
        dyp[p] = load_ro(dyr + first + s.pack(p));
        hp[p] = load_ro(hr + first + s.pack(p));
        if (kKeepPacks && dh != nullptr) {
          dhp[p] = load_ro(dhr + first + s.pack(p));
        }
      } else {
        zero(dyp[p]);
        zero(hp[p]);
      }
    }
    const acc_t mu = kRms || !ok ? acc_t(0) : mean[row];
    const acc_t rs = ok ? rstd[row] : acc_t(0);
    // The row's sums of g * xhat and g, and the column sums. Slots past the row hold dy = 0.
    acc_t sums[2] = {acc_t(0), acc_t(0)};
    acc_t xhats[kKeepPacks ? 1 : kPacks][kVec];  // without kKeepPacks: xhat and g, for the output
    acc_t gs[kKeepPacks ? 1 : kPacks][kVec];
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      const PackOf<weight_t, residual_t> wp = load_weight(p);
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        const acc_t d = dyp[p].get(e);
        const acc_t xhat = (hp[p].get(e) - mu) * rs;
        const acc_t g = weigh(wp, p, e, d);
        if constexpr (!kKeepPacks) {
          xhats[p][e] = xhat;
          gs[p][e] = g;
        }
        sums[0] += g * xhat;
        dw[p][e] += d * xhat;
        if constexpr (!kRms) {
          sums[1] += g;
          db[p][e] += d;
        }
      }
    }
    row_sums(sums, group, scratch, calls);
    const acc_t c1 = sums[0] * inv_cols;
    const acc_t c2 = kRms ? acc_t(0) : sums[1] * inv_cols;
    if (!ok) {
      continue;
    }
    // dh_total, stored in residual_t (and in x's dtype scalar_t when it differs).
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      if (!s.in_row(p)) {
        continue;
      }
      PackOf<weight_t, residual_t> wp;
      if constexpr (kKeepPacks) {
        wp = load_weight(p);
      } else if (dh != nullptr) {
        dhp[p] = load_ro(dhr + first + s.pack(p));
      }
      PackOf<residual_t, residual_t> out;
      PackOf<scalar_t, residual_t> out_x;
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        acc_t xhat;
        acc_t g;
        if constexpr (kKeepPacks) {
          xhat = (hp[p].template get<1>(e) - mu) * rs;
          g = weigh(wp, p, e, dyp[p].template get<1>(e));
        } else {
          xhat = xhats[p][e];
          g = gs[p][e];
        }
        acc_t t = rs * (g - xhat * c1 - c2);
        if (dh != nullptr) {
          t += dhp[p].template get<1>(e);
        }
        out.v[e] = static_cast<residual_t>(t);
        out_x.v[e] = static_cast<scalar_t>(t);
      }
      reinterpret_cast<PackOf<residual_t, residual_t>*>(dsum)[first + s.pack(p)] = out;
      if constexpr (!std::is_same_v<scalar_t, residual_t>) {
        reinterpret_cast<PackOf<scalar_t, residual_t>*>(dx)[first + s.pack(p)] = out_x;
      }
    }
  }
  // The CTA's column sums: one partial row of each.
  const int64_t at = static_cast<int64_t>(blockIdx.x) * cols;
  const int in_cta = static_cast<int>(threadIdx.x) / group;
  const int groups = kOneGroup ? 1 : groups_per_cta;
  acc_t* const w_row = partial_w != nullptr ? partial_w + at : nullptr;
  if constexpr (kRms) {
    acc_t* const outs[1] = {w_row};
    write_cta_column_sums<1, kPacks, kVec>(outs, staging, s.lane, in_cta, groups, group, s.packs,
                                           [&](int, int p, int e) { return dw[p][e]; });
  } else {
    acc_t* const outs[2] = {w_row, partial_b != nullptr ? partial_b + at : nullptr};
    write_cta_column_sums<2, kPacks, kVec>(outs, staging, s.lane, in_cta, groups, group, s.packs,
                                           [&](int i, int p, int e) { return i == 0 ? dw[p][e] : db[p][e]; });
  }
}

// -----------------------------------------------------------------------------
// Launch
// -----------------------------------------------------------------------------

// A tensor's address (0: absent), for the planner's alignment checks.
uintptr_t address(const at::Tensor& t) { return t.defined() ? reinterpret_cast<uintptr_t>(t.data_ptr()) : 0; }

template <typename scalar_t, typename residual_t, typename weight_t, typename out_t>
bool launch_fwd(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& weight, const at::Tensor& bias,
                at::Tensor& h, at::Tensor& y, at::Tensor& mean, at::Tensor& rstd, NormShape shape, double eps,
                Norm norm) {
  using acc_t = at::opmath_type<residual_t>;
  const AddFwdCall call{shape.rows,
                        shape.cols,
                        static_cast<int>(sizeof(scalar_t)),
                        static_cast<int>(sizeof(residual_t)),
                        static_cast<int>(sizeof(weight_t)),
                        static_cast<int>(sizeof(out_t)),
                        norm,
                        address(x),
                        address(residual),
                        address(weight),
                        address(bias),
                        address(h),
                        address(y)};
  const AddFwdPlan plan = plan_add_fwd(call, device_limits());
  if (plan.variant == AddFwdVariant::kSeparate) {
    return false;
  }
  if (plan.grid == 0) {
    return true;
  }
  auto* mean_p = mean.defined() ? mean.data_ptr<acc_t>() : nullptr;
  auto* rstd_p = rstd.defined() ? rstd.data_ptr<acc_t>() : nullptr;
  bool launched = false;
  BOOL_SWITCH(plan.norm == Norm::kRms, kRms, [&] {
    BOOL_SWITCH(plan.variant == AddFwdVariant::kFewRows, kFewRows, [&] {
      constexpr Norm kN = kRms ? Norm::kRms : Norm::kLayerNorm;
      constexpr AddFwdVariant kV = kFewRows ? AddFwdVariant::kFewRows : AddFwdVariant::kRows;
      packs_switch(plan.packs_per_thread, [&](auto packs_c) {
        constexpr int kP = decltype(packs_c)::value;
        if constexpr (add_fwd_kernel_exists(kV, kP, sizeof(residual_t))) {
          add_norm_fwd_kernel<scalar_t, residual_t, weight_t, out_t, kN, kP, kV>
              <<<plan.grid, plan.threads, 0, at::cuda::getCurrentCUDAStream()>>>(
                  reinterpret_cast<const scalar_t*>(x.data_ptr()),
                  reinterpret_cast<const residual_t*>(residual.data_ptr()),
                  weight.defined() ? reinterpret_cast<const weight_t*>(weight.data_ptr()) : nullptr,
                  bias.defined() ? reinterpret_cast<const weight_t*>(bias.data_ptr()) : nullptr,
                  reinterpret_cast<residual_t*>(h.data_ptr()), reinterpret_cast<out_t*>(y.data_ptr()), mean_p, rstd_p,
                  shape.rows, static_cast<int>(shape.cols), plan.threads_per_row,
                  acc_t(1) / static_cast<acc_t>(shape.cols), static_cast<acc_t>(eps));
          launched = true;
        }
      });
    });
  });
  TORCH_CHECK(launched, "reference_ops: internal error, no fused forward kernel for variant ",
              add_fwd_variant_name(plan.variant), " at ", plan.packs_per_thread, " packs per thread");
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

// Calls f(kernel) with the compiled backward kernel that `k` names; false when that kernel is not
// built (no plan names one).
template <typename scalar_t, typename residual_t, typename weight_t, typename out_t, typename F>
bool with_bwd_kernel(const AddBwdKernel& k, F&& f) {
  bool found = false;
  BOOL_SWITCH(k.norm == Norm::kRms, kRms, [&] {
    packs_switch(k.packs, [&](auto packs_c) {
      constexpr int kP = decltype(packs_c)::value;
      if constexpr (add_bwd_kernel_exists(AddBwdVariant::kRows, kP, sizeof(residual_t))) {
        if (k.variant == AddBwdVariant::kRows) {
          f(add_norm_bwd_kernel < scalar_t, residual_t, weight_t, out_t, kRms ? Norm::kRms : Norm::kLayerNorm, kP >);
          found = true;
        }
      }
    });
  });
  return found;
}

// The runtime's occupancy of the compiled backward kernels, for plan_add_bwd (kept per kernel and
// CTA size by resident_blocks: the query costs the host microseconds).
template <typename scalar_t, typename residual_t, typename weight_t, typename out_t>
class RuntimeAddBwdOccupancy final : public AddBwdOccupancy {
 public:
  int64_t resident_ctas(const AddBwdKernel& k, int threads) const override {
    int64_t resident = 0;
    const bool found = with_bwd_kernel<scalar_t, residual_t, weight_t, out_t>(
        k, [&](auto kernel) { resident = resident_blocks(kernel, threads, 0); });
    TORCH_CHECK(found, "reference_ops: internal error, no fused backward kernel for variant ",
                add_bwd_variant_name(k.variant), " at ", k.packs, " packs per thread");
    return resident;
  }
};

template <typename scalar_t, typename residual_t, typename weight_t, typename out_t>
bool launch_bwd(const at::Tensor& dy, const at::Tensor& dh, const at::Tensor& h, const at::Tensor& mean,
                const at::Tensor& rstd, const at::Tensor& weight, at::Tensor& dsum, at::Tensor& dx, at::Tensor& dweight,
                at::Tensor& dbias, NormShape shape, Norm norm) {
  using acc_t = at::opmath_type<residual_t>;
  const AddBwdCall call{shape.rows,
                        shape.cols,
                        static_cast<int>(sizeof(scalar_t)),
                        static_cast<int>(sizeof(residual_t)),
                        static_cast<int>(sizeof(weight_t)),
                        static_cast<int>(sizeof(out_t)),
                        norm,
                        dweight.defined(),
                        dbias.defined(),
                        address(dy),
                        address(dh),
                        address(h),
                        address(weight),
                        address(dsum),
                        address(dx)};
  const AddBwdPlan plan =
      plan_add_bwd(call, device_limits(), RuntimeAddBwdOccupancy<scalar_t, residual_t, weight_t, out_t>());
  if (plan.variant == AddBwdVariant::kSeparate) {
    return false;
  }
  if (plan.grid == 0) {
    if (dweight.defined()) {
      dweight.zero_();
    }
    if (dbias.defined()) {
      dbias.zero_();
    }
    return true;
  }
  // One partial row of each column sum a CTA.
  const bool both = dweight.defined() && dbias.defined();
  at::Tensor partial;
  if (plan.sum_parts > 0) {
    partial = at::empty({both ? 2 : 1, plan.sum_parts, shape.cols},
                        h.options().dtype(c10::CppTypeToScalarType<acc_t>::value));
  }
  acc_t* pw = dweight.defined() ? partial.data_ptr<acc_t>() : nullptr;
  acc_t* pb = dbias.defined() ? partial.data_ptr<acc_t>() + (pw ? plan.sum_parts * shape.cols : 0) : nullptr;
  const bool launched = with_bwd_kernel<scalar_t, residual_t, weight_t, out_t>(
      {plan.variant, plan.norm, plan.packs_per_thread}, [&](auto kernel) {
        kernel<<<plan.grid, plan.threads, 0, at::cuda::getCurrentCUDAStream()>>>(
            reinterpret_cast<const out_t*>(dy.data_ptr()),
            dh.defined() ? reinterpret_cast<const residual_t*>(dh.data_ptr()) : nullptr,
            reinterpret_cast<const residual_t*>(h.data_ptr()), mean.defined() ? mean.data_ptr<acc_t>() : nullptr,
            rstd.data_ptr<acc_t>(), weight.defined() ? reinterpret_cast<const weight_t*>(weight.data_ptr()) : nullptr,
            reinterpret_cast<residual_t*>(dsum.data_ptr()),
            dx.defined() ? reinterpret_cast<scalar_t*>(dx.data_ptr()) : nullptr, pw, pb, shape.rows,
            static_cast<int>(shape.cols), plan.threads_per_row);
      });
  TORCH_CHECK(launched, "reference_ops: internal error, no fused backward kernel for variant ",
              add_bwd_variant_name(plan.variant), " at ", plan.packs_per_thread, " packs per thread");
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  if (plan.sum_parts > 0) {
    weight_t* out0 = reinterpret_cast<weight_t*>(dweight.defined() ? dweight.data_ptr() : dbias.data_ptr());
    weight_t* out1 = both ? reinterpret_cast<weight_t*>(dbias.data_ptr()) : nullptr;
    launch_column_sums(partial.const_data_ptr<acc_t>(), out0, both ? pb : nullptr, out1, plan.sum_parts, shape.cols,
                       plan.sum_vec, at::cuda::getCurrentCUDAStream());
  }
  return true;
}

// Calls f(scalar_t{}, residual_t{}, weight_t{}, out_t{}) for x's dtype scalar_t, the stream's dtype
// residual_t, the parameters' dtype weight_t (residual_t, or float32 beside a 16-bit stream) and y's
// dtype out_t (residual_t, or x's beside a float32 stream).
template <typename F>
void dispatch_add_types(c10::ScalarType x_dtype, c10::ScalarType r_dtype, c10::ScalarType y_dtype, bool float_params,
                        F&& f) {
  if (x_dtype != r_dtype) {
    TORCH_CHECK(r_dtype == at::kFloat && (y_dtype == x_dtype || y_dtype == r_dtype),
                "reference_ops: internal error, a ", x_dtype, " x beside a ", r_dtype, " residual and a ", y_dtype,
                " y");
    AT_DISPATCH_SWITCH(x_dtype, "reference_ops_add_norm", AT_DISPATCH_CASE(at::kHalf, [&] {
                         if (y_dtype == x_dtype) {
                           f(scalar_t{}, float{}, float{}, scalar_t{});
                         } else {
                           f(scalar_t{}, float{}, float{}, float{});
                         }
                       }) AT_DISPATCH_CASE(at::kBFloat16, [&] {
                         if (y_dtype == x_dtype) {
                           f(scalar_t{}, float{}, float{}, scalar_t{});
                         } else {
                           f(scalar_t{}, float{}, float{}, float{});
                         }
                       }));
    return;
  }
  TORCH_CHECK(y_dtype == r_dtype, "reference_ops: internal error, a ", y_dtype, " y beside a ", r_dtype, " residual");
  dispatch_types(r_dtype, float_params, [&](auto t, auto w) { f(t, t, w, t); });
}

}  // namespace

bool add_norm_fwd(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& weight, const at::Tensor& bias,
                  at::Tensor& h, at::Tensor& y, at::Tensor& mean, at::Tensor& rstd, NormShape shape, double eps,
                  bool rms) {
  bool fused = false;
  dispatch_add_types(x.scalar_type(), residual.scalar_type(), y.scalar_type(), has_float_params(residual, weight, bias),
                     [&](auto t, auto r, auto w, auto o) {
                       using scalar_t = decltype(t);
                       using residual_t = decltype(r);
                       using weight_t = decltype(w);
                       using out_t = decltype(o);
                       fused = launch_fwd<scalar_t, residual_t, weight_t, out_t>(x, residual, weight, bias, h, y, mean,
                                                                                 rstd, shape, eps,
                                                                                 rms ? Norm::kRms : Norm::kLayerNorm);
                     });
  return fused;
}

bool add_norm_bwd(const at::Tensor& dy, const at::Tensor& dh, const at::Tensor& h, const at::Tensor& mean,
                  const at::Tensor& rstd, const at::Tensor& weight, at::Tensor& dsum, at::Tensor& dx,
                  at::Tensor& dweight, at::Tensor& dbias, NormShape shape, bool rms) {
  bool fused = false;
  const c10::ScalarType x_dtype = dx.defined() ? dx.scalar_type() : h.scalar_type();
  dispatch_add_types(x_dtype, h.scalar_type(), dy.scalar_type(), has_float_params(h, dweight, dbias),
                     [&](auto t, auto r, auto w, auto o) {
                       using scalar_t = decltype(t);
                       using residual_t = decltype(r);
                       using weight_t = decltype(w);
                       using out_t = decltype(o);
                       fused = launch_bwd<scalar_t, residual_t, weight_t, out_t>(dy, dh, h, mean, rstd, weight, dsum,
                                                                                 dx, dweight, dbias, shape,
                                                                                 rms ? Norm::kRms : Norm::kLayerNorm);
                     });
  return fused;
}

}  // namespace cuda
}  // namespace reference_ops
