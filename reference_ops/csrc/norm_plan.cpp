// Planning of the forward and the backward: shape, alignment and device limits in, a variant and
// a launch shape out. No CUDA runtime calls (the backward asks the occupancy of compiled kernels
// through BwdOccupancy), so that tests/test_plan.py runs it on the CPU.
#include "norm_plan.h"

#include <algorithm>
#include <limits>
#include <numeric>

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

// -----------------------------------------------------------------------------
// Backward
// -----------------------------------------------------------------------------

const char* bwd_variant_name(BwdVariant v) {
  switch (v) {
    case BwdVariant::kFewRows:
      return "few_rows";
    case BwdVariant::kStaged:
      return "staged";
    case BwdVariant::kStagedSpan:
      return "staged_span";
    case BwdVariant::kRows:
      return "rows";
    case BwdVariant::kRowsElems:
      return "rows_elems";
    case BwdVariant::kWide:
      return "wide";
    case BwdVariant::kWideElems:
      return "wide_elems";
  }
  return "?";
}

namespace {

// CTAs of a kernel that keep every SM busy (at least one per SM).
int64_t resident_blocks(const BwdOccupancy& occupancy, const DeviceLimits& device, const BwdKernel& kernel,
                        int threads) {
  return static_cast<int64_t>(std::max(occupancy.ctas_per_sm(kernel, threads, 0), 1)) * device.sm_count;
}

// The few-row kernel when its whole grid is resident at once and x is small enough (see
// kFewRowsMaxBytes); false otherwise. Needs 16-byte-aligned pointers and N a multiple of the pack.
bool plan_few_rows(const BwdCall& a, const DeviceLimits& device, const BwdOccupancy& occupancy, BwdPlan& plan) {
  const int vec = kPackBytes / a.x_bytes;
  const int64_t packs = a.cols / vec;
  if (a.cols % vec != 0 || packs > kFewThreads * kFewPacks ||
      a.rows > kFewRowsPerThread * (kFewThreads / kFewColPacks) ||
      a.rows * a.cols * static_cast<int64_t>(a.x_bytes) > kFewRowsMaxBytes) {
    return false;
  }
  const int64_t col_blocks = a.dweight || a.dbias ? ceil_div(packs, kFewColPacks) : 0;
  // Up to one row per SM: a block per row, kFewSpreadPacks packs a thread. A row block's time is
  // its SM's share of the bytes more than its latency, so rows spread over more SMs (and more
  // threads a row) finish sooner.
  const bool spread = a.rows <= device.sm_count;
  const int packs_per_thread = spread && packs <= kFewThreads * kFewSpreadPacks ? kFewSpreadPacks : kFewPacks;
  const int threads_per_row = static_cast<int>(next_pow2(ceil_div(packs, packs_per_thread)));
  // Blocks as small as a row, the column blocks' final sums (2 x kFewColPacks packs of elements)
  // and one row per column thread allow (M = 1: 65 blocks of 512 threads were mostly idle);
  // spread rows leave the rest of a row block idle but for the reduction's barriers.
  const int64_t col_threads = next_pow2(a.rows * kFewColPacks);
  const int threads = static_cast<int>(
      std::clamp<int64_t>(col_threads, std::max<int64_t>(threads_per_row, 2 * kFewColPacks * vec), kFewThreads));
  const int rows_per_block = spread ? 1 : threads / threads_per_row;
  const int64_t row_blocks = ceil_div(a.rows, rows_per_block);
  const BwdKernel kernel{BwdVariant::kFewRows, packs_per_thread, a.norm, false};
  if (row_blocks + col_blocks > resident_blocks(occupancy, device, kernel, threads)) {
    return false;
  }
  plan.variant = BwdVariant::kFewRows;
  plan.vec = vec;
  plan.packs_per_thread = packs_per_thread;
  plan.threads_per_row = threads_per_row;
  plan.groups = rows_per_block;
  plan.threads = threads;
  plan.row_blocks = row_blocks;
  plan.grid = row_blocks + col_blocks;
  return true;
}

// Launch shape of the staged kernel for a cluster of `cluster` CTAs; false when a row slice does
// not fit. The rows staged ahead fill at most `share_bytes` of shared memory (the CTA's share of
// an SM).
bool staged_shape(const BwdCall& a, const DeviceLimits& device, int cluster, BwdPlan& c,
                  int64_t share_bytes = std::numeric_limits<int64_t>::max()) {
  const int vec = kPackBytes / a.x_bytes;
  const int64_t acc_bytes = bwd_acc_bytes(a.x_bytes);
  const int64_t max_packs = kMaxStagedAccBytes / acc_bytes / vec;
  // Rows of a width that is not a multiple of vec are spans (kSpanExtraPacks packs more at most).
  // The weight slice is kept, present or not (ones), and for spans one shifted copy per row group.
  const bool span = a.cols % vec != 0;
  const int64_t wpack = static_cast<int64_t>(a.param_bytes) * vec;
  // At most one statistics pair per thread and stage (row groups narrower than a warp).
  const int64_t stats = kBwdMaxStages * kBwdThreads * 2 * acc_bytes;
  // Shared memory one CTA may use (opt-in limit), less a margin for static arrays (row_reduce's
  // scratch: up to 4 KiB), less the statistics.
  const int64_t budget = device.smem_per_block_optin - 8192 - stats;
  c.cluster = cluster;
  c.slice_packs = ceil_div(a.cols / vec + (span ? kSpanExtraPacks : 0), cluster);
  // A span's packs beyond the aligned width take the kernel's extra slot (with kSpanExtraPacks
  // threads a row or more).
  const int64_t body = span ? std::max<int64_t>(c.slice_packs - kSpanExtraPacks, 1) : c.slice_packs;
  if (body > kBwdThreads * max_packs || c.slice_packs * (kBwdMinStages * 2 * kPackBytes + wpack) > budget) {
    return false;
  }
  // Rows split over a cluster need whole warps per row.
  const int64_t min_threads = cluster > 1 ? kWarpSize : 1;
  auto spread = [&](int64_t row_packs) {
    c.threads_per_row = static_cast<int>(
        std::min<int64_t>(kBwdThreads, std::max(min_threads, next_pow2(ceil_div(row_packs, max_packs)))));
    c.packs_per_thread = static_cast<int>(next_pow2(ceil_div(row_packs, c.threads_per_row)));
  };
  spread(body);
  if (span && c.threads_per_row < kSpanExtraPacks) {
    spread(c.slice_packs);
  }
  c.groups = cluster == 1 ? kBwdThreads / c.threads_per_row : 1;
  c.threads = c.threads_per_row * c.groups;
  const int64_t stage_bytes = c.groups * 2 * c.slice_packs * kPackBytes;
  // Weight slices, and the extra slot's accumulators of every row group.
  const int64_t param_bytes = (span ? std::min<int64_t>(c.groups, span_shifts(a.x_bytes)) : 1) * c.slice_packs * wpack +
                              (span ? c.groups * kSpanExtraPacks * 2 * vec * acc_bytes : 0);
  if (param_bytes + stage_bytes > budget) {
    return false;
  }
  const int64_t segments = kBwdThreads / std::min(c.threads_per_row, kWarpSize);
  const int64_t stats_bytes = segments * 2 * acc_bytes;
  // As many stages as fit in one CTA's shared memory and in its share of the SM's (at least one).
  const int64_t fit = std::min((budget - param_bytes) / stage_bytes,
                               (share_bytes - param_bytes - kPackBytes) / (stats_bytes + stage_bytes));
  c.stages = static_cast<int>(std::clamp<int64_t>(fit, 1, kBwdMaxStages));
  c.smem_bytes = param_bytes + c.stages * (stats_bytes + stage_bytes) + kPackBytes;
  return true;
}

// The staged kernel on the smallest cluster that holds a row slice, larger while partial rows are
// a large share of the traffic; false when no cluster fits (then the register kernels run).
bool plan_staged(const BwdCall& a, const DeviceLimits& device, const BwdOccupancy& occupancy, BwdPlan& plan) {
  const int vec = kPackBytes / a.x_bytes;
  BwdPlan c;
  int cluster = 1;
  while (!staged_shape(a, device, cluster, c)) {
    if (cluster >= device.max_cluster) {
      return false;
    }
    cluster *= 2;
  }
  const int64_t params = (a.dweight ? 1 : 0) + (a.dbias ? 1 : 0);
  const int64_t moved = 3 * a.rows * a.cols * static_cast<int64_t>(a.x_bytes);
  while (cluster < device.max_cluster) {
    const int64_t clusters = std::min<int64_t>(device.sm_count / cluster, ceil_div(a.rows, c.groups));
    const int64_t partial = 2 * clusters * a.cols * params * static_cast<int64_t>(bwd_acc_bytes(a.x_bytes));
    BwdPlan wider;
    if (clusters <= 1 || partial < kMinPartialBytes || partial <= kMaxPartialShare * moved ||
        !staged_shape(a, device, cluster * 2, wider)) {
      break;
    }
    cluster *= 2;
    c = wider;
  }
  const bool span = a.cols % vec != 0;
  c.variant = span ? BwdVariant::kStagedSpan : BwdVariant::kStaged;
  c.norm = a.norm;
  c.vec = vec;
  c.valid = bwd_kernel_exists(c.variant, c.packs_per_thread, a.x_bytes);
  if (!c.valid) {
    plan = c;
    return true;
  }
  // Fewer rows in flight per CTA when that lets the SM hold every CTA its registers allow: a
  // second CTA hides latency better than deeper staging.
  const BwdKernel kernel{c.variant, c.packs_per_thread, a.norm, false};
  const int per_sm = occupancy.ctas_per_sm(kernel, c.threads, 0);
  const int64_t static_smem = occupancy.static_smem_bytes(kernel);
  const int64_t share =
      std::max<int64_t>(device.smem_per_sm / std::max(per_sm, 1) - device.smem_reserved_per_block - static_smem, 0);
  // The share changes the stages alone.
  const int packs_before = c.packs_per_thread;
  c.valid = staged_shape(a, device, c.cluster, c, share) && c.packs_per_thread == packs_before;
  if (!c.valid) {
    plan = c;
    return true;
  }
  int64_t clusters =
      std::min(ceil_div(a.rows, c.groups), occupancy.resident_clusters(kernel, c.threads, c.cluster, c.smem_bytes));
  if (span && clusters * c.groups < a.rows) {
    // Span rows: a row step (clusters x groups) that is a multiple of the number of shifts gives
    // each row group the same shift in every row it takes.
    const int64_t shifts = span_shifts(a.x_bytes);
    const int64_t step = shifts / std::gcd<int64_t>(c.groups, shifts);
    clusters = std::max(clusters / step * step, step);
  }
  c.clusters = clusters;
  c.grid = clusters * c.cluster;
  // One cluster adds every row itself; more write partial rows for column_sum_kernel.
  c.sum_parts = clusters > 1 && (a.dweight || a.dbias) ? clusters : 0;
  plan = c;
  return true;
}

// The register kernel, or the two-pass kernels for rows past its reach, on packs of `vec`
// elements.
BwdPlan plan_rows(const BwdCall& a, const DeviceLimits& device, const BwdOccupancy& occupancy, int vec) {
  BwdPlan plan;
  plan.norm = a.norm;
  plan.vec = vec;
  const int acc_bytes = bwd_acc_bytes(a.x_bytes);
  const int max_packs = std::max(1, std::min(8, kMaxBwdAccBytes / acc_bytes / vec));
  const RowConfig cfg = choose_row_config(a.cols / vec, max_packs, kBwdThreads);
  if (cfg.packs_per_thread > max_packs) {
    plan.variant = vec > 1 ? BwdVariant::kWide : BwdVariant::kWideElems;
    plan.packs_per_thread = 0;
    plan.threads = kColumnsThreads;
    plan.stats_grid = std::min(
        a.rows, resident_blocks(occupancy, device, BwdKernel{plan.variant, 0, a.norm, false}, kWideStatsThreads));
    plan.strips = (a.cols / vec + kColumnsThreads - 1) / kColumnsThreads;
    // Enough row chunks to fill the GPU twice over, each chunk at least 8 rows.
    const int64_t resident =
        resident_blocks(occupancy, device, BwdKernel{plan.variant, 0, a.norm, true}, kColumnsThreads);
    const int64_t want_chunks = (2 * resident + plan.strips - 1) / plan.strips;
    const int64_t chunks = std::max<int64_t>(1, std::min(want_chunks, (a.rows + 7) / 8));
    plan.rows_per_chunk = (a.rows + chunks - 1) / chunks;
    plan.chunks = (a.rows + plan.rows_per_chunk - 1) / plan.rows_per_chunk;
    plan.grid = plan.strips * plan.chunks;
    plan.sum_parts = a.dweight || a.dbias ? plan.chunks : 0;
    return plan;
  }
  plan.variant = vec > 1 ? BwdVariant::kRows : BwdVariant::kRowsElems;
  plan.packs_per_thread = cfg.packs_per_thread;
  plan.threads_per_row = cfg.threads_per_row;
  plan.groups = kBwdThreads / cfg.threads_per_row;
  plan.threads = kBwdThreads;
  plan.valid = bwd_kernel_exists(plan.variant, plan.packs_per_thread, a.x_bytes);
  if (!plan.valid) {
    return plan;
  }
  plan.grid = std::min(
      (a.rows + plan.groups - 1) / plan.groups,
      resident_blocks(occupancy, device, BwdKernel{plan.variant, plan.packs_per_thread, a.norm, false}, kBwdThreads));
  plan.sum_parts = a.dweight || a.dbias ? plan.grid : 0;
  return plan;
}

void plan_column_sums(const BwdCall& a, const DeviceLimits& device, BwdPlan& plan) {
  plan.sum_vec = column_sum_vec(a.cols, bwd_acc_bytes(a.x_bytes), a.dweight && a.dbias, device.sm_count);
  plan.sum_tiles = ceil_div(a.cols, kSumCols * plan.sum_vec);
}

}  // namespace

int column_sum_vec(int64_t cols, int acc_bytes, bool both, int sm_count) {
  const int vec = kPackBytes / acc_bytes;
  const int64_t vector_blocks = ceil_div(cols, kSumCols * vec) * (both ? 2 : 1);
  return cols % vec == 0 && vector_blocks >= sm_count ? vec : 1;
}

BwdPlan plan_bwd(const BwdCall& a, const DeviceLimits& device, const BwdOccupancy& occupancy) {
  const int vec = kPackBytes / a.x_bytes;
  const int64_t param_pack = static_cast<int64_t>(a.param_bytes) * vec;
  const bool aligned =
      a.x % kPackBytes == 0 && a.dy % kPackBytes == 0 && a.dx % kPackBytes == 0 && a.weight % param_pack == 0;
  BwdPlan plan;
  plan.norm = a.norm;
  if (!(aligned && (plan_few_rows(a, device, occupancy, plan) || plan_staged(a, device, occupancy, plan)))) {
    plan = plan_rows(a, device, occupancy, aligned && a.cols % vec == 0 ? vec : 1);
  }
  if (plan.sum_parts > 0) {
    plan_column_sums(a, device, plan);
  }
  return plan;
}

// -----------------------------------------------------------------------------
// Fused residual ops
// -----------------------------------------------------------------------------

const char* add_fwd_variant_name(AddFwdVariant v) {
  switch (v) {
    case AddFwdVariant::kRows:
      return "add_rows";
    case AddFwdVariant::kFewRows:
      return "add_few_rows";
    case AddFwdVariant::kSeparate:
      return "separate";
  }
  return "?";
}

const char* add_bwd_variant_name(AddBwdVariant v) {
  switch (v) {
    case AddBwdVariant::kRows:
      return "add_rows";
    case AddBwdVariant::kSeparate:
      return "separate";
  }
  return "?";
}

namespace {

// A row of `cols` elements in packs of `vec` on at most `max_threads` threads at about
// `target_packs` packs each; {0, 0} when the width is not a multiple of the pack or a thread's
// slice would pass `max_packs`.
RowConfig add_row_config(int64_t cols, int vec, int max_packs, int max_threads, int target_packs) {
  if (cols % vec != 0) {
    return {0, 0};
  }
  const RowConfig rc = choose_row_config(cols / vec, target_packs, max_threads);
  if (rc.packs_per_thread > max_packs || static_cast<int64_t>(rc.packs_per_thread) * rc.threads_per_row * vec < cols) {
    return {0, 0};
  }
  return rc;
}

// Whether an address (0: an absent tensor) starts at a multiple of a pack of `vec` elements of
// `bytes` each: 16 bytes for the stream's tensors, 8 for a 16-bit x beside a float32 stream, 32 for
// float32 parameters beside a 16-bit stream.
bool pack_aligned(uintptr_t address, int bytes, int vec) {
  return address % (static_cast<uintptr_t>(bytes) * static_cast<uintptr_t>(vec)) == 0;
}

}  // namespace

AddFwdPlan plan_add_fwd(const AddFwdCall& a, const DeviceLimits& device) {
  AddFwdPlan plan;
  plan.norm = a.norm;
  const int vec = add_vec(a.r_bytes);
  const int max_packs = add_max_packs(a.r_bytes);
  RowConfig rc = add_row_config(a.cols, vec, max_packs, kAddFwdSharedSmThreads, kAddTargetPacks);
  if (rc.packs_per_thread == 0) {
    rc = add_row_config(a.cols, vec, max_packs, kAddFwdMaxThreads, kAddTargetPacks);
  }
  const bool aligned = pack_aligned(a.x, a.x_bytes, vec) && pack_aligned(a.residual, a.r_bytes, vec) &&
                       pack_aligned(a.weight, a.param_bytes, vec) && pack_aligned(a.bias, a.param_bytes, vec) &&
                       pack_aligned(a.h, a.r_bytes, vec) && pack_aligned(a.y, a.y_bytes, vec);
  if (rc.packs_per_thread == 0 || !aligned) {
    return plan;
  }
  plan.variant = AddFwdVariant::kRows;
  plan.vec = vec;
  plan.packs_per_thread = rc.packs_per_thread;
  plan.threads_per_row = rc.threads_per_row;
  plan.threads = std::max(rc.threads_per_row, kAddCtaThreads);
  // Calls of one wave or less (a few rows, as at decode time) are latency-bound: one pack a thread
  // (the shortest chains of conversions and adds; two for rows wider than kAddFewRowsMaxThreads
  // packs, whose reduction over 32 warps would cost more), weight and bias loaded with x, and the
  // rows spread over the SMs, one a CTA where there are SMs enough, in CTAs of up to
  // kAddFewRowsMaxThreads threads.
  const RowConfig one = add_row_config(a.cols, vec, max_packs, kAddFewRowsMaxThreads, 1);
  const int64_t rows_per_cta = next_pow2(ceil_div(a.rows, device.sm_count));
  if (one.packs_per_thread > 0 && one.packs_per_thread <= kAddFewRowsMaxPacks &&
      rows_per_cta * one.threads_per_row <= kAddFewRowsMaxThreads) {
    plan.variant = AddFwdVariant::kFewRows;
    plan.packs_per_thread = one.packs_per_thread;
    plan.threads_per_row = one.threads_per_row;
    plan.threads = static_cast<int>(std::max<int64_t>(rows_per_cta * one.threads_per_row, kWarpSize));
  }
  plan.grid = ceil_div(a.rows, plan.threads / plan.threads_per_row);
  return plan;
}

AddBwdPlan plan_add_bwd(const AddBwdCall& a, const DeviceLimits& device, const AddBwdOccupancy& occupancy) {
  AddBwdPlan plan;
  plan.norm = a.norm;
  const int vec = add_vec(a.r_bytes);
  const RowConfig rc =
      add_row_config(a.cols, vec, add_max_packs(a.r_bytes), kAddBwdMaxThreads, add_bwd_target_packs(a.r_bytes));
  const bool aligned = pack_aligned(a.dy, a.y_bytes, vec) && pack_aligned(a.dh, a.r_bytes, vec) &&
                       pack_aligned(a.h, a.r_bytes, vec) && pack_aligned(a.weight, a.param_bytes, vec) &&
                       pack_aligned(a.dsum, a.r_bytes, vec) && pack_aligned(a.dx, a.x_bytes, vec);
  if (rc.packs_per_thread == 0 || !aligned) {
    return plan;
  }
  plan.variant = AddBwdVariant::kRows;
  plan.vec = vec;
  plan.packs_per_thread = rc.packs_per_thread;
  plan.threads_per_row = rc.threads_per_row;
  plan.threads = std::max(rc.threads_per_row, kAddCtaThreads);
  if (a.rows == 0) {
    return plan;
  }
  // As many CTAs as are resident at once (each CTA's column sums are one row of the partial
  // table), fewer for calls of fewer rows.
  const AddBwdKernel kernel{plan.variant, a.norm, plan.packs_per_thread};
  plan.grid = std::max<int64_t>(1, std::min(ceil_div(a.rows, plan.threads / plan.threads_per_row),
                                            occupancy.resident_ctas(kernel, plan.threads)));
  if (a.dweight || a.dbias) {
    plan.sum_parts = plan.grid;
    plan.sum_vec = column_sum_vec(a.cols, bwd_acc_bytes(a.r_bytes), a.dweight && a.dbias, device.sm_count);
  }
  return plan;
}

}  // namespace reference_ops
