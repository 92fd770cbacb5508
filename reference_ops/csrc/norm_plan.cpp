// Planning of the forward: shape, alignment and device limits in, a variant and a launch shape
// out. No CUDA runtime calls, so that tests/test_plan.py runs it on the CPU.
#include "norm_plan.h"

#include <algorithm>

namespace reference_ops {

const char* fwd_variant_name(FwdVariant v) {
  switch (v) {
    case FwdVariant::kRows:
      return "rows";
    case FwdVariant::kRowsSpan:
      return "rows_span";
    case FwdVariant::kRowsFull:
      return "rows_full";
    case FwdVariant::kGroup8:
      return "group8";
    case FwdVariant::kGroup16:
      return "group16";
    case FwdVariant::kGroup32:
      return "group32";
    case FwdVariant::kFewRows:
      return "few_rows";
    case FwdVariant::kFewRowsFull:
      return "few_rows_full";
    case FwdVariant::kCluster:
      return "cluster";
    case FwdVariant::kClusterSpan:
      return "cluster_span";
    case FwdVariant::kClusterFull:
      return "cluster_full";
    case FwdVariant::kUncached:
      return "uncached";
    case FwdVariant::kUncachedElems:
      return "uncached_elems";
  }
  return "?";
}

RowConfig choose_row_config(int64_t num_packs, int64_t target_packs, int64_t max_threads) {
  const int64_t tpr = std::min<int64_t>(next_pow2((num_packs + target_packs - 1) / target_packs), max_threads);
  const int64_t ppt = next_pow2((num_packs + tpr - 1) / tpr);
  return {static_cast<int>(tpr), static_cast<int>(ppt)};
}

namespace {

// The register variants' plan for rows of `vec`-element packs (`span`: a width that is not a
// multiple of vec); false when the row does not fit in the registers of the largest cluster.
bool plan_rows(const FwdCall& a, const DeviceLimits& device, int vec, bool span, FwdPlan& plan) {
  const bool rms = a.norm == Norm::kRms;
  const bool same_params = a.param_bytes == a.x_bytes;
  const int64_t num_packs = a.cols / vec + (span ? kSpanExtraFwdPacks : 0);
  // kRowTargetPacks packs per thread on at most kRowMaxThreads threads, so several CTAs share an
  // SM, for rows of up to kRowWidePacks packs; then kRowMaxPacks, on up to 1024 threads; wider
  // rows are split over a cluster of kRowMaxThreads-thread CTAs at kRowMaxPacks. Rows with both
  // weight and bias split from kSplitPacks packs on, into slices of at most kSplitSlicePacks:
  // each CTA then reads only its slice of the two parameter vectors, which the L2 -> SM path
  // otherwise carries for every row.
  const bool two_params = !rms && a.weight != 0 && a.bias != 0;
  const int64_t per_cta = two_params ? kSplitSlicePacks : static_cast<int64_t>(kRowMaxThreads) * kRowMaxPacks;
  int cluster = 1;
  if (num_packs > (two_params ? kSplitPacks : static_cast<int64_t>(kMaxThreadsPerRow) * kRowMaxPacks)) {
    while (cluster < device.max_cluster && ceil_div(num_packs, cluster) > per_cta) {
      cluster *= 2;
    }
  }
  const int64_t slice_packs = ceil_div(num_packs, cluster);
  // Threads for the slice's aligned packs; a span's two more packs take the kernel's extra slot
  // (with two threads or more), else they count in.
  auto config = [&](int64_t packs) {
    const bool wide = packs > kRowWidePacks || cluster > 1;
    const RowConfig cfg = choose_row_config(packs, wide ? kRowMaxPacks : kRowTargetPacks, kRowMaxThreads);
    return cfg.packs_per_thread > kRowMaxPacks ? choose_row_config(packs, kRowMaxPacks, kMaxThreadsPerRow) : cfg;
  };
  RowConfig cfg = config(span ? std::max<int64_t>(slice_packs - kSpanExtraFwdPacks, 1) : slice_packs);
  if (span && cfg.threads_per_row < 2) {
    cfg = config(slice_packs);
  }
  if (cfg.packs_per_thread > kRowMaxPacks) {
    return false;
  }
  // Calls of one wave or less (few rows, as at decode time) are latency-bound: kFewRowPacks
  // packs a thread (more threads, shorter chains of adds each), weight and bias loaded with x
  // (one round trip to L2 a call instead of two; the registers cost occupancy, which such a call
  // does not use).
  auto groups = [](const RowConfig& r) { return std::max(r.threads_per_row, kRowBlockThreads) / r.threads_per_row; };
  const bool one_wave = !span && cluster == 1 && ceil_div(a.rows, groups(cfg)) <= device.sm_count;
  if (one_wave) {
    const RowConfig few = choose_row_config(slice_packs, kFewRowPacks, kRowMaxThreads);
    cfg = few.packs_per_thread <= cfg.packs_per_thread ? few : cfg;
  }
  plan.vec = vec;
  plan.packs_per_thread = cfg.packs_per_thread;
  plan.threads_per_row = cfg.threads_per_row;
  plan.cluster = cluster;
  plan.groups = cluster > 1 ? 1 : groups(cfg);
  plan.clusters = ceil_div(a.rows, plan.groups);
  plan.slice_packs = static_cast<int>(slice_packs);
  // Span rows read weight and bias from tables of vec shifted copies.
  plan.param_stride = static_cast<int>(num_packs);
  plan.span_tables = span && (a.weight != 0 || a.bias != 0);
  // y is stored plainly when x and y overflow the L2 anyway; in smaller calls evict-first keeps
  // x in L2 for the backward or a next call.
  plan.plain_y = 2 * a.rows * a.cols * static_cast<int64_t>(a.x_bytes) > device.l2_bytes;

  // Every slot of every thread holds a pack of the row. Besides the fixed groups, the unbounded
  // kernels serve LayerNorm rows with parameters of x's type (one reduction for mean and
  // variance) in one-wave calls, and rows of 8 packs for 16-bit x, the issue-bound case.
  const bool full8 = a.x_bytes == 2 && same_params;
  const bool full =
      same_params && !span && static_cast<int64_t>(cfg.threads_per_row) * cfg.packs_per_thread * cluster == num_packs;
  if (cluster > 1) {
    plan.variant = !span && !rms && full8 && full ? FwdVariant::kClusterFull
                   : span                         ? FwdVariant::kClusterSpan
                                                  : FwdVariant::kCluster;
    return true;
  }
  if (!span && same_params && full && cfg.packs_per_thread == kRowTargetPacks) {
    switch (cfg.threads_per_row) {
      case 8:
        plan.variant = FwdVariant::kGroup8;
        return true;
      case 16:
        plan.variant = FwdVariant::kGroup16;
        return true;
      case 32:
        plan.variant = FwdVariant::kGroup32;
        return true;
      default:
        break;
    }
  }
  if (!span && !rms && same_params && cfg.packs_per_thread <= kRowTargetPacks && one_wave) {
    plan.variant = full ? FwdVariant::kFewRowsFull : FwdVariant::kFewRows;
    return true;
  }
  if (!span && !rms && full8 && cfg.packs_per_thread == kRowMaxPacks && full) {
    plan.variant = FwdVariant::kRowsFull;
    return true;
  }
  plan.variant = span ? FwdVariant::kRowsSpan : FwdVariant::kRows;
  return true;
}

}  // namespace

FwdPlan plan_fwd(const FwdCall& a, const DeviceLimits& device) {
  FwdPlan plan;
  plan.norm = a.norm;
  const int vec = kPackBytes / a.x_bytes;
  const int64_t param_pack = static_cast<int64_t>(a.param_bytes) * vec;
  const bool aligned =
      a.x % kPackBytes == 0 && a.y % kPackBytes == 0 && a.weight % param_pack == 0 && a.bias % param_pack == 0;
  const bool span = a.cols % vec != 0;
  if (aligned && plan_rows(a, device, vec, span, plan)) {
    return plan;
  }
  plan = FwdPlan{};
  plan.norm = a.norm;
  plan.threads_per_row = kUncachedThreads;
  if (aligned && !span) {
    plan.variant = FwdVariant::kUncached;
    plan.vec = vec;
  } else {
    plan.variant = FwdVariant::kUncachedElems;
    plan.vec = 1;
  }
  return plan;
}

}  // namespace reference_ops
