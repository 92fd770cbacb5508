// The kernel variants of the forward, the backward and the fused residual ops' two directions, as
// named data, and the function of each that plans a call: which variant runs and with what launch
// shape. Plain C++ (no CUDA runtime, no ATen), so that the planning is unit-tested on the CPU
// (tests/test_plan.py builds tests/plan_test.cpp with g++).
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define REFERENCE_OPS_HOST_DEVICE __host__ __device__
#else
#define REFERENCE_OPS_HOST_DEVICE
#endif

namespace reference_ops {

// -----------------------------------------------------------------------------
// Limits shared by the planner and the kernels
// -----------------------------------------------------------------------------

// Threads of a warp. Shifts and masks use kLog2WarpSize: a signed division by 32 is not a shift.
constexpr int kWarpSize = 32;
constexpr int kLog2WarpSize = 5;
static_assert(1 << kLog2WarpSize == kWarpSize, "warp size is a power of two");

// Bytes moved by one vectorised global load or store (LDG.128 / STG.128).
constexpr int kPackBytes = 16;

// Largest number of threads that share one row.
constexpr int kMaxThreadsPerRow = 1024;

// Largest cluster the kernels use (8 is portable).
constexpr int kMaxClusterSize = 8;

// Register forward: packs per thread aimed for, the most a thread holds (128 bytes of row in scalar_t:
// 32 registers), the most threads of a CTA below 1024, the widest row (in packs) spread at
// kRowTargetPacks a thread, and the CTA size when rows share a CTA.
constexpr int kRowTargetPacks = 4;
constexpr int kRowMaxPacks = 8;
constexpr int kRowMaxThreads = 512;
constexpr int64_t kRowWidePacks = static_cast<int64_t>(kRowMaxThreads) * kRowTargetPacks;
constexpr int kRowBlockThreads = 128;
// Packs a thread aims for in calls of one wave or less.
constexpr int kFewRowPacks = 2;
// Weight and bias: rows wider than kSplitPacks packs go to a cluster whose slices hold at most
// kSplitSlicePacks (256 threads x kRowMaxPacks).
constexpr int64_t kSplitPacks = static_cast<int64_t>(kRowMaxThreads) * kRowMaxPacks;
constexpr int64_t kSplitSlicePacks = 256 * kRowMaxPacks;
// A row span (width not a multiple of the pack) covers at most two packs more than N / kVec.
constexpr int kSpanExtraFwdPacks = 2;
// Block size of the uncached kernel (one row per block).
constexpr int kUncachedThreads = 1024;

// -----------------------------------------------------------------------------
// Variants
// -----------------------------------------------------------------------------

enum class Norm : int { kLayerNorm, kRms };

// Rows whose width is a multiple of the pack, or spans: the packs of the tensor that cover a row.
enum class RowLayout : int { kAligned, kSpan };

// What each forward variant is for (see docs/reference_ops.md for the shapes each serves).
enum class FwdVariant : int {
  kRows,          // aligned rows held in registers, bounds checked per slot
  kRowsSpan,      // widths that are not a multiple of the pack: the tensor's packs covering a row
  kRowsFull,      // LayerNorm, 16-bit x and parameters, exactly 8 packs a thread: no bounds checks
  kGroup8,        // exactly 4 packs a thread on a group of 8 / 16 / 32 threads fixed at compile
  kGroup16,       //   time (16-bit N = 256 / 512 / 1024, float N = 128 / 256 / 512)
  kGroup32,       //
  kFewRows,       // LayerNorm calls of one wave or less: weight and bias loaded with x
  kFewRowsFull,   // the same for rows that fill every slot
  kCluster,       // rows wider than one CTA holds, split over a thread-block cluster (sm_90)
  kClusterSpan,   // the same for widths that are not a multiple of the pack
  kClusterFull,   // LayerNorm, 16-bit, cluster slices that fill every slot
  kUncached,      // rows beyond the largest cluster: read twice, 16-byte packs
  kUncachedElems  // pointers that are not 16-byte aligned: read twice, single elements
};

// The compile-time shape of a variant. norm_fwd_rows_kernel reads it from kFwdVariants.
struct FwdTraits {
  FwdVariant variant;
  bool registers;        // norm_fwd_rows_kernel (else norm_fwd_uncached_kernel)
  bool cluster;          // a row split over the CTAs of a cluster
  bool span;             // rows of a width that is not a multiple of the pack
  bool full;             // every slot of every thread holds a pack of the row: no bounds checks
  int group;             // threads per row fixed at compile time (0: a launch argument)
  bool early;            // weight and bias loaded together with x
  bool layer_norm_only;  // RMSNorm never takes it
  bool same_params;      // only for parameters of x's dtype
  bool two_byte_x;       // only for float16 / bfloat16 x
  unsigned packs_mask;   // packs per thread it is built for: bit p for 2^p packs
};

// Packs per thread the register kernels are built for: bit p set for 2^p.
constexpr unsigned kPacks1 = 1u;
constexpr unsigned kPacks2 = 2u;
constexpr unsigned kPacks4 = 4u;
constexpr unsigned kPacks8 = 8u;
constexpr unsigned kPacksAny = kPacks1 | kPacks2 | kPacks4 | kPacks8;

// The supported variants, in FwdVariant order. A packs count left out of a mask is one the
// planner never produces for that variant, so no kernel is built for it: a span row has at least
// two packs a thread (its extra slot holds the packs past the aligned width), and a row of one
// pack a thread on a power-of-two group of threads fills every slot (kFewRowsFull, not kFewRows).
// tests/test_plan.py checks every width up to 2^20 against these masks.
// clang-format off
constexpr FwdTraits kFwdVariants[] = {
//  variant                       regs   clust  span   full   grp early  LN     same   16bit  packs
  {FwdVariant::kRows,           true,  false, false, false, 0,  false, false, false, false, kPacksAny},
  {FwdVariant::kRowsSpan,       true,  false, true,  false, 0,  false, false, false, false, kPacks2 | kPacks4 | kPacks8},
  {FwdVariant::kRowsFull,       true,  false, false, true,  0,  false, true,  true,  true,  kPacks8},
  {FwdVariant::kGroup8,         true,  false, false, true,  8,  false, false, true,  false, kPacks4},
  {FwdVariant::kGroup16,        true,  false, false, true,  16, false, false, true,  false, kPacks4},
  {FwdVariant::kGroup32,        true,  false, false, true,  32, false, false, true,  false, kPacks4},
  {FwdVariant::kFewRows,        true,  false, false, false, 0,  true,  true,  true,  false, kPacks2 | kPacks4},
  {FwdVariant::kFewRowsFull,    true,  false, false, true,  0,  true,  true,  true,  false, kPacks1 | kPacks2 | kPacks4},
  {FwdVariant::kCluster,        true,  true,  false, false, 0,  false, false, false, false, kPacks8},
  {FwdVariant::kClusterSpan,    true,  true,  true,  false, 0,  false, false, false, false, kPacks8},
  {FwdVariant::kClusterFull,    true,  true,  false, true,  0,  false, true,  true,  true,  kPacks8},
  {FwdVariant::kUncached,       false, false, false, false, 0,  false, false, false, false, 0u},
  {FwdVariant::kUncachedElems,  false, false, false, false, 0,  false, false, false, false, 0u},
};
// clang-format on
constexpr int kFwdVariantCount = static_cast<int>(sizeof(kFwdVariants) / sizeof(kFwdVariants[0]));

REFERENCE_OPS_HOST_DEVICE constexpr FwdTraits fwd_traits(FwdVariant v) { return kFwdVariants[static_cast<int>(v)]; }

// Whether norm_fwd_rows_kernel is built for this variant, norm, packs per thread and dtype sizes
// (parameters of x's dtype when param_bytes == x_bytes: float params of a 16-bit x are wider).
REFERENCE_OPS_HOST_DEVICE constexpr bool fwd_rows_kernel_exists(FwdVariant v, Norm norm, int packs, int x_bytes,
                                                                int param_bytes) {
  const FwdTraits t = fwd_traits(v);
  return t.registers && (t.packs_mask & static_cast<unsigned>(packs)) != 0 &&
         (!t.layer_norm_only || norm == Norm::kLayerNorm) && (!t.same_params || param_bytes == x_bytes) &&
         (!t.two_byte_x || x_bytes == 2);
}

const char* fwd_variant_name(FwdVariant v);

// -----------------------------------------------------------------------------
// Planning
// -----------------------------------------------------------------------------

// What the planners need to know of the GPU.
struct DeviceLimits {
  int sm_count;
  int64_t l2_bytes;
  int max_cluster;               // largest thread-block cluster it runs: kMaxClusterSize on sm_90+, else 1
  int64_t smem_per_block_optin;  // shared memory one CTA may opt in to
  int64_t smem_per_sm;
  int64_t smem_reserved_per_block;  // taken by the runtime from every CTA's share
};

// One forward call: shape, dtype sizes (parameters: x's dtype, or float for a 16-bit x), the
// norm, and the addresses of x, y, weight and bias (0 for an absent parameter).
struct FwdCall {
  int64_t rows;
  int64_t cols;
  int x_bytes;
  int param_bytes;
  Norm norm;
  uintptr_t x;
  uintptr_t y;
  uintptr_t weight;
  uintptr_t bias;
};

// The variant and its launch shape. Register variants: `clusters` clusters of `cluster` CTAs of
// threads_per_row * groups threads; each CTA takes `groups` rows (or, in a cluster, a slice of
// `slice_packs` packs of one row). Uncached variants: CTAs of kUncachedThreads threads, one row
// at a time; their grid (min(rows, resident CTAs)) is the launcher's, from the runtime's
// occupancy of the compiled kernel.
struct FwdPlan {
  FwdVariant variant = FwdVariant::kUncachedElems;
  Norm norm = Norm::kLayerNorm;
  int vec = 1;               // elements of x per pack
  int packs_per_thread = 0;  // register variants
  int threads_per_row = 0;
  int groups = 1;
  int cluster = 1;
  int64_t clusters = 0;
  int slice_packs = 0;
  int param_stride = 0;      // packs per row of the span parameter tables
  bool span_tables = false;  // span rows with weight or bias: build the shifted tables first
  bool plain_y = false;      // y stored plainly (calls larger than the L2), else evict-first
  int threads() const { return threads_per_row * groups; }
};

// The one place that picks a forward kernel: with 16-byte-aligned pointers a register variant
// (row spans when N is not a multiple of the pack) while the row fits in the registers of the
// largest cluster; otherwise an uncached variant.
FwdPlan plan_fwd(const FwdCall& call, const DeviceLimits& device);

// -----------------------------------------------------------------------------
// Helpers shared with the backward's planning
// -----------------------------------------------------------------------------

inline bool is_aligned(const void* p, int64_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

inline int64_t next_pow2(int64_t v) {
  int64_t p = 1;
  while (p < v) {
    p <<= 1;
  }
  return p;
}

// How a row of `num_packs` packs is spread over threads: `threads_per_row` threads (a power of
// two) each holding `packs_per_thread` packs in registers.
struct RowConfig {
  int threads_per_row;
  int packs_per_thread;
};

// Spreads `num_packs` over at most `max_threads` threads with about `target_packs` packs each;
// packs_per_thread is a power of two.
RowConfig choose_row_config(int64_t num_packs, int64_t target_packs, int64_t max_threads);

// -----------------------------------------------------------------------------
// Backward: limits shared by the planner and the kernels
// -----------------------------------------------------------------------------

// Threads per CTA of the register and staged kernels.
constexpr int kBwdThreads = 512;

// Bytes of dweight (and as many of dbias) accumulators one thread of the register kernel keeps in
// registers; also bounds the shared memory of its block reduction (32 KiB).
constexpr int kMaxBwdAccBytes = 64;

// Staged kernel: rows staged per row group (at least one in flight while one is processed), and
// the bytes of dweight (and as many of dbias) accumulators one thread keeps in registers.
constexpr int kBwdMinStages = 2;
constexpr int kBwdMaxStages = 4;
constexpr int kMaxStagedAccBytes = 128;
// Span rows (N not a multiple of the pack) are copied from the 32-byte sector (two packs) at or
// below their start: cp.async's 16-byte copies of a span that starts half-way into a sector ask L2
// for half as many sectors again. The span then reaches up to kSpanAlignPacks + 1 packs past the
// row's N / kVec whole ones; the row's start within its first pack pair, the shift, is below
// kSpanAlignPacks * kVec.
constexpr int kSpanAlignPacks = 2;
constexpr int kSpanExtraPacks = kSpanAlignPacks + 1;
// Partial rows (written, then read by column_sum_kernel) above this share of the bytes the
// backward must move make a larger cluster worth its reductions; below it, a row kept whole in one
// CTA is cheaper than the cluster's exchange.
constexpr double kMaxPartialShare = 0.1;
// Partial rows below this many bytes cost less than the reductions a larger cluster adds.
constexpr int64_t kMinPartialBytes = 32 << 20;

// Few-row kernel: threads per block, packs per thread in a dx row (fewer when the rows are spread
// one per block), packs of columns per dweight / dbias block (128 bytes of each row), the most
// rows one thread of such a block adds, and the most bytes of x for which the second read of x
// and dy (from L2) costs less than the staged kernel's longer chain.
constexpr int kFewThreads = 512;
constexpr int kFewPacks = 4;
constexpr int kFewSpreadPacks = 2;
constexpr int kFewColPacks = 8;
constexpr int kFewRowsPerThread = 16;
constexpr int64_t kFewRowsMaxBytes = 4 << 20;

// Threads per block of the wide-row kernels.
constexpr int kWideStatsThreads = 1024;
constexpr int kColumnsThreads = 256;

// Tile of column_sum_kernel: 32 threads (of 1 or 16 / sizeof(acc) columns each) x 16 partial-row
// slices.
constexpr int kSumCols = 32;
constexpr int kSumSlices = 16;

// Bytes of the accumulator type (at::opmath_type) of an x of x_bytes: float, or double for double.
REFERENCE_OPS_HOST_DEVICE constexpr int bwd_acc_bytes(int x_bytes) { return x_bytes > 4 ? x_bytes : 4; }

// The shifts a span row of x_bytes elements can start at within its first pack pair.
REFERENCE_OPS_HOST_DEVICE constexpr int span_shifts(int x_bytes) { return kPackBytes / x_bytes * kSpanAlignPacks; }

// -----------------------------------------------------------------------------
// Backward variants
// -----------------------------------------------------------------------------

// What each backward variant is for (see docs/reference_ops.md for the shapes each serves).
enum class BwdVariant : int {
  kFewRows,     // one wave of dx row blocks and dweight / dbias column blocks (x up to 4 MiB)
  kStaged,      // aligned rows staged in shared memory by cp.async, persistent CTAs or clusters
  kStagedSpan,  // the same for widths that are not a multiple of the pack
  kRows,        // unstaged rows in registers, 16-byte packs (rows the staged kernel cannot hold)
  kRowsElems,   // the same on single elements (pointers not 16-byte aligned, or spans)
  kWide,        // rows past the register kernel: row statistics, then column strips; packs
  kWideElems    // the same on single elements
};

// The compile-time shape of a variant.
struct BwdTraits {
  BwdVariant variant;
  bool staged;        // norm_bwd_staged_kernel
  bool span;          // rows of a width that is not a multiple of the pack
  bool packs16;       // 16-byte packs (else single elements)
  bool two_pass;      // norm_bwd_row_stats_kernel, then norm_bwd_columns_kernel
  int max_acc_bytes;  // dweight (and dbias) accumulator bytes a thread holds (0: no bound)
};

// clang-format off
constexpr BwdTraits kBwdVariants[] = {
//  variant                   staged span   pack16 2pass  acc bytes
  {BwdVariant::kFewRows,     false, false, true,  false, 0},
  {BwdVariant::kStaged,      true,  false, true,  false, kMaxStagedAccBytes},
  {BwdVariant::kStagedSpan,  true,  true,  true,  false, kMaxStagedAccBytes},
  {BwdVariant::kRows,        false, false, true,  false, kMaxBwdAccBytes},
  {BwdVariant::kRowsElems,   false, false, false, false, kMaxBwdAccBytes},
  {BwdVariant::kWide,        false, false, true,  true,  0},
  {BwdVariant::kWideElems,   false, false, false, true,  0},
};
// clang-format on
constexpr int kBwdVariantCount = static_cast<int>(sizeof(kBwdVariants) / sizeof(kBwdVariants[0]));

REFERENCE_OPS_HOST_DEVICE constexpr BwdTraits bwd_traits(BwdVariant v) { return kBwdVariants[static_cast<int>(v)]; }

// Elements of x per pack of a variant.
REFERENCE_OPS_HOST_DEVICE constexpr int bwd_vec(BwdVariant v, int x_bytes) {
  return bwd_traits(v).packs16 ? kPackBytes / x_bytes : 1;
}

// Whether the kernel of a variant is built for this many packs per thread and x of x_bytes: the
// packs plan_bwd produces, no more (tests/plan_test.cpp checks, on the limits of GPUs from sm_75 to
// sm_120, that every plan names a built kernel and that every built kernel is planned).
// Few-row kernel: kFewSpreadPacks and kFewPacks. Staged kernels and kRowsElems: the powers of two
// up to 8 whose accumulators fit their bytes. kRows: the packs that fill its accumulator bytes. It
// runs only for rows the staged kernel cannot hold, and a row of fewer packs is one thread's, which
// the staged kernel holds on every GPU but a float64 row of 2 packs where a CTA has 64 KiB of
// shared memory (sm_75: 512 row groups of x and dy, 32 KiB, beside the float64 statistics).
// The two-pass kernels have no packs per thread.
REFERENCE_OPS_HOST_DEVICE constexpr bool bwd_kernel_exists(BwdVariant v, int packs, int x_bytes) {
  const BwdTraits t = bwd_traits(v);
  if (t.two_pass) {
    return packs == 0;
  }
  if (v == BwdVariant::kFewRows) {
    return packs == kFewSpreadPacks || packs == kFewPacks;
  }
  const bool pow2 = packs == 1 || packs == 2 || packs == 4 || packs == 8;
  const int acc_bytes = packs * bwd_vec(v, x_bytes) * bwd_acc_bytes(x_bytes);
  if (v == BwdVariant::kRows) {
    return pow2 && (acc_bytes == t.max_acc_bytes || (x_bytes == 8 && packs == 2));
  }
  return pow2 && acc_bytes <= t.max_acc_bytes;
}

const char* bwd_variant_name(BwdVariant v);

// -----------------------------------------------------------------------------
// Backward planning
// -----------------------------------------------------------------------------

// One backward call: shape, dtype sizes (parameters: x's dtype, or float for a 16-bit x), the
// norm (RMSNorm: no mean), which parameter gradients are asked for, and the addresses of x, dy,
// dx and weight (0 for no weight). rows >= 1 and cols >= 1 (norm_bwd handles M = 0 itself).
struct BwdCall {
  int64_t rows;
  int64_t cols;
  int x_bytes;
  int param_bytes;
  Norm norm;
  bool dweight;
  bool dbias;
  uintptr_t x;
  uintptr_t dy;
  uintptr_t dx;
  uintptr_t weight;
};

// A compiled kernel the planner asks the occupancy of: the variant's kernel at `packs` packs per
// thread (0 for the two-pass kernels), of `norm` (the staged kernel is built per norm), and for
// the two-pass variants which of its two kernels.
struct BwdKernel {
  BwdVariant variant;
  int packs;
  Norm norm;
  bool columns;  // two-pass: norm_bwd_columns_kernel (else norm_bwd_row_stats_kernel)
};

// The occupancy of compiled kernels: the runtime's answers in norm_bwd.cu, a model in the tests.
class BwdOccupancy {
 public:
  virtual ~BwdOccupancy() = default;
  // CTAs of `threads` threads with `smem_bytes` of dynamic shared memory one SM holds.
  virtual int ctas_per_sm(const BwdKernel& kernel, int threads, int64_t smem_bytes) const = 0;
  // Static shared memory of one CTA.
  virtual int64_t static_smem_bytes(const BwdKernel& kernel) const = 0;
  // Clusters of `cluster` CTAs of `threads` threads and `smem_bytes` of dynamic shared memory
  // resident at once on the GPU (CTAs when cluster is 1); the launcher raises the kernel's
  // dynamic shared memory limit to smem_bytes here.
  virtual int64_t resident_clusters(const BwdKernel& kernel, int threads, int cluster, int64_t smem_bytes) const = 0;
};

// The variant and its launch shape.
//   kFewRows: `grid` CTAs of `threads` threads, the first `row_blocks` of which each take
//     `groups` rows of threads_per_row threads at packs_per_thread packs.
//   kStaged*: `clusters` clusters of `cluster` CTAs of threads_per_row * groups threads, each
//     CTA a slice of `slice_packs` packs of a row, `stages` rows per row group staged ahead in
//     `smem_bytes` of dynamic shared memory.
//   kRows*: `grid` CTAs of kBwdThreads threads, rows of threads_per_row threads.
//   kWide*: `stats_grid` CTAs of kWideStatsThreads threads, then a grid of `strips` x `chunks`
//     CTAs of kColumnsThreads threads, `rows_per_chunk` rows each.
// Then, when sum_parts > 0, column_sum_kernel adds sum_parts partial rows into dweight / dbias,
// sum_vec columns per thread, on a grid of sum_tiles x (1 or 2) CTAs.
struct BwdPlan {
  BwdVariant variant = BwdVariant::kRowsElems;
  Norm norm = Norm::kLayerNorm;
  int vec = 1;  // elements of x per pack
  int packs_per_thread = 0;
  int threads_per_row = 1;
  int groups = 1;
  int threads = kBwdThreads;
  int64_t grid = 0;
  int64_t row_blocks = 0;
  int cluster = 1;
  int64_t clusters = 0;
  int stages = 1;
  int64_t slice_packs = 0;
  int64_t smem_bytes = 0;
  int64_t stats_grid = 0;
  int64_t strips = 0;
  int64_t chunks = 0;
  int64_t rows_per_chunk = 0;
  int64_t sum_parts = 0;
  int sum_vec = 1;
  int64_t sum_tiles = 0;
  bool valid = true;  // false: a planner invariant broke (the launcher refuses the plan)
};

// column_sum_kernel's columns per thread over partial rows of `cols` sums of acc_bytes each (two
// outputs when `both`): 16-byte loads when every partial row starts 16-byte aligned and the wider
// tiles still give every SM a block (with fewer blocks than SMs, the idle SMs cost more than the
// wider loads save), else 1.
int column_sum_vec(int64_t cols, int acc_bytes, bool both, int sm_count);

// The one place that picks a backward kernel: with 16-byte-aligned pointers the few-row kernel
// when its grid is one wave and x is small, else the staged kernel (row spans when N is not a
// multiple of the pack) on the smallest cluster that holds a row; otherwise, or for rows too wide
// to stage, the register kernel, or the two-pass kernels past its reach (single elements unless
// both the pointers and N allow packs).
BwdPlan plan_bwd(const BwdCall& call, const DeviceLimits& device, const BwdOccupancy& occupancy);

// -----------------------------------------------------------------------------
// Fused residual ops (add_norm.cu): limits shared by the planner and the kernels
// -----------------------------------------------------------------------------

// The fused kernels work in 16-byte packs of the residual stream's dtype residual_t (r_bytes): x, weight,
// bias and y are read and written in packs of as many elements, whatever their own dtype.
REFERENCE_OPS_HOST_DEVICE constexpr int add_vec(int r_bytes) { return kPackBytes / r_bytes; }

// Bytes of accumulators a thread holds per row tensor (16 floats, 8 doubles): the forward keeps h,
// the backward dy, xhat, g and the running weight / bias gradients; more spills.
constexpr int kAddMaxAccBytes = 64;

// Packs of residual_t one thread holds: 2 for a 16-bit stream, 4 for float32 and float64.
REFERENCE_OPS_HOST_DEVICE constexpr int add_max_packs(int r_bytes) {
  return kAddMaxAccBytes / bwd_acc_bytes(r_bytes) / add_vec(r_bytes);
}

// CTA size below which rows share a CTA (both directions); the backward's staging of column sums
// is sized for it.
constexpr int kAddCtaThreads = 256;
// The forward's largest CTA, and the one a row is first tried on: rows that need more threads at
// kAddTargetPacks packs a thread take more packs a thread where their slices still fit (float32
// rows of 4097-8192, float64 of 2049-4096: 4 packs instead of 2), so that two CTAs share an SM and
// one's loads are in flight while the other reduces; a 1024-thread CTA of 2 packs is alone on its
// SM.
constexpr int kAddFwdMaxThreads = 1024;
constexpr int kAddFwdSharedSmThreads = 512;
// Calls of one wave or less: rows of up to this many threads, in CTAs of up to as many (larger
// ones hold fewer rows in flight than two CTAs an SM would), at up to this many packs a thread.
constexpr int kAddFewRowsMaxThreads = 512;
constexpr int kAddFewRowsMaxPacks = 2;
// The backward's largest CTA.
constexpr int kAddBwdMaxThreads = 512;
// Packs per thread a row is spread at (fewer for narrow rows, up to add_max_packs).
constexpr int kAddTargetPacks = 2;

// The backward's packs per thread: one for a 16-bit stream, at up to two CTAs of kAddBwdMaxThreads
// an SM (64 registers), so that twice as many threads have their loads in flight; float32 slices
// held to 64 registers spill, so they keep kAddTargetPacks at up to 128 registers.
REFERENCE_OPS_HOST_DEVICE constexpr int add_bwd_target_packs(int r_bytes) { return r_bytes == 2 ? 1 : kAddTargetPacks; }
// The backward kernel's CTAs an SM at launch bounds (two for a 16-bit stream at one pack a thread).
REFERENCE_OPS_HOST_DEVICE constexpr int add_bwd_min_blocks(int r_bytes, int packs) {
  return r_bytes == 2 && packs == 1 ? 2 : 1;
}

// -----------------------------------------------------------------------------
// Fused residual ops: variants
// -----------------------------------------------------------------------------

// What each fused forward variant is for. kSeparate is the documented fallback: shapes the fused
// kernel does not take (widths not a multiple of residual_t's pack, pointers not aligned to their packs,
// rows wider than a thread's registers hold on kAddFwdMaxThreads threads) are added and then
// normalised by the separate kernels (at::add, then norm_fwd's planned variants; norm.cpp).
enum class AddFwdVariant : int {
  kRows,     // rows held in registers on a power-of-two group of threads
  kFewRows,  // calls of one wave or less: weight and bias loaded with x and residual
  kSeparate  // not fused: the add, then norm_fwd
};

// The compile-time shape of a fused forward variant. add_norm_fwd_kernel reads it.
struct AddFwdTraits {
  AddFwdVariant variant;
  bool fused;           // add_norm_fwd_kernel (else the separate kernels)
  bool early;           // weight and bias loaded together with x and residual
  int max_threads;      // the kernel's launch bound: its largest CTA
  unsigned packs_mask;  // packs per thread it is built for (bit p for 2^p), up to add_max_packs
};

// clang-format off
constexpr AddFwdTraits kAddFwdVariants[] = {
//  variant                   fused  early  threads                 packs
  {AddFwdVariant::kRows,      true,  false, kAddFwdMaxThreads,      kPacks1 | kPacks2 | kPacks4},
  {AddFwdVariant::kFewRows,   true,  true,  kAddFewRowsMaxThreads,  kPacks1 | kPacks2},
  {AddFwdVariant::kSeparate,  false, false, 0,                      0u},
};
// clang-format on
constexpr int kAddFwdVariantCount = static_cast<int>(sizeof(kAddFwdVariants) / sizeof(kAddFwdVariants[0]));

REFERENCE_OPS_HOST_DEVICE constexpr AddFwdTraits add_fwd_traits(AddFwdVariant v) {
  return kAddFwdVariants[static_cast<int>(v)];
}

// Whether add_norm_fwd_kernel is built for this variant, packs per thread and stream dtype size
// (for both norms): the packs plan_add_fwd produces, no more (tests/plan_test.cpp checks both ways).
REFERENCE_OPS_HOST_DEVICE constexpr bool add_fwd_kernel_exists(AddFwdVariant v, int packs, int r_bytes) {
  const AddFwdTraits t = add_fwd_traits(v);
  return t.fused && (t.packs_mask & static_cast<unsigned>(packs)) != 0 && packs <= add_max_packs(r_bytes);
}

const char* add_fwd_variant_name(AddFwdVariant v);

// What each fused backward variant is for. kSeparate, as in the forward: the separate kernels
// (norm_bwd's planned variants, then the gradient of h added; norm.cpp) for the shapes the fused
// kernel does not take.
enum class AddBwdVariant : int {
  kRows,     // a persistent grid of row groups, rows and column sums in registers
  kSeparate  // not fused: norm_bwd, then the add of dh
};

struct AddBwdTraits {
  AddBwdVariant variant;
  bool fused;           // add_norm_bwd_kernel (else the separate kernels)
  int max_threads;      // the kernel's launch bound
  unsigned packs_mask;  // packs per thread it is built for (bit p for 2^p), up to add_max_packs
};

// clang-format off
constexpr AddBwdTraits kAddBwdVariants[] = {
//  variant                   fused  threads            packs
  {AddBwdVariant::kRows,      true,  kAddBwdMaxThreads, kPacks1 | kPacks2 | kPacks4},
  {AddBwdVariant::kSeparate,  false, 0,                 0u},
};
// clang-format on
constexpr int kAddBwdVariantCount = static_cast<int>(sizeof(kAddBwdVariants) / sizeof(kAddBwdVariants[0]));

REFERENCE_OPS_HOST_DEVICE constexpr AddBwdTraits add_bwd_traits(AddBwdVariant v) {
  return kAddBwdVariants[static_cast<int>(v)];
}

// Whether add_norm_bwd_kernel is built for this variant, packs per thread and stream dtype size
// (for both norms).
REFERENCE_OPS_HOST_DEVICE constexpr bool add_bwd_kernel_exists(AddBwdVariant v, int packs, int r_bytes) {
  const AddBwdTraits t = add_bwd_traits(v);
  return t.fused && (t.packs_mask & static_cast<unsigned>(packs)) != 0 && packs <= add_max_packs(r_bytes);
}

const char* add_bwd_variant_name(AddBwdVariant v);

// -----------------------------------------------------------------------------
// Fused residual ops: planning
// -----------------------------------------------------------------------------

// One fused forward call: shape, the dtype sizes of x, of the residual stream residual_t (h's), of the
// parameters and of y, the norm, and the addresses of x, residual, weight, bias, h and y (0 for an
// absent parameter).
struct AddFwdCall {
  int64_t rows;
  int64_t cols;
  int x_bytes;
  int r_bytes;
  int param_bytes;
  int y_bytes;
  Norm norm;
  uintptr_t x;
  uintptr_t residual;
  uintptr_t weight;
  uintptr_t bias;
  uintptr_t h;
  uintptr_t y;
};

// The variant and its launch shape: `grid` CTAs of `threads` threads, rows of threads_per_row
// threads (a power of two) at packs_per_thread packs of residual_t each, threads / threads_per_row rows a
// CTA. grid is 0 for a call of no rows (nothing to launch).
struct AddFwdPlan {
  AddFwdVariant variant = AddFwdVariant::kSeparate;
  Norm norm = Norm::kLayerNorm;
  int vec = 1;  // elements per pack (of residual_t, and of every tensor beside it)
  int packs_per_thread = 0;
  int threads_per_row = 0;
  int threads = 0;
  int64_t grid = 0;
};

// The one place that picks the fused forward's kernel: with every pointer aligned to its pack and a
// width that is a multiple of residual_t's pack, rows on at most kAddFwdSharedSmThreads threads (then
// kAddFwdMaxThreads) while they fit in the registers; kFewRows for calls of one wave or less, one
// pack a thread (two for rows wider than kAddFewRowsMaxThreads packs), the rows spread over the
// SMs; otherwise kSeparate.
AddFwdPlan plan_add_fwd(const AddFwdCall& call, const DeviceLimits& device);

// One fused backward call: shape, dtype sizes (x: the dtype of x's gradient, residual_t's when it writes
// none of its own), the norm, which parameter gradients are asked for, and the addresses of dy,
// dh, h, weight, dsum (the gradient of h) and dx (0 for an absent one).
struct AddBwdCall {
  int64_t rows;
  int64_t cols;
  int x_bytes;
  int r_bytes;
  int param_bytes;
  int y_bytes;
  Norm norm;
  bool dweight;
  bool dbias;
  uintptr_t dy;
  uintptr_t dh;
  uintptr_t h;
  uintptr_t weight;
  uintptr_t dsum;
  uintptr_t dx;
};

// A compiled fused backward kernel the planner asks the occupancy of.
struct AddBwdKernel {
  AddBwdVariant variant;
  Norm norm;
  int packs;
};

// The occupancy of the compiled kernels: the runtime's answers in add_norm.cu, a model in the tests.
class AddBwdOccupancy {
 public:
  virtual ~AddBwdOccupancy() = default;
  // CTAs of `threads` threads resident on the whole GPU at once, at least one an SM.
  virtual int64_t resident_ctas(const AddBwdKernel& kernel, int threads) const = 0;
};

// The variant and its launch shape: a persistent grid of `grid` CTAs of `threads` threads, rows of
// threads_per_row threads at packs_per_thread packs of residual_t each; then, when sum_parts > 0,
// column_sum_kernel adds sum_parts partial rows (one a CTA) into dweight / dbias, sum_vec columns
// a thread. grid is 0 for a call of no rows (the launcher zeroes dweight / dbias).
struct AddBwdPlan {
  AddBwdVariant variant = AddBwdVariant::kSeparate;
  Norm norm = Norm::kLayerNorm;
  int vec = 1;
  int packs_per_thread = 0;
  int threads_per_row = 0;
  int threads = 0;
  int64_t grid = 0;
  int64_t sum_parts = 0;
  int sum_vec = 1;
};

// The one place that picks the fused backward's kernel: with every pointer aligned to its pack and
// a width that is a multiple of residual_t's pack, rows on at most kAddBwdMaxThreads threads at
// add_bwd_target_packs packs a thread while they fit in the registers, on as many CTAs as are
// resident at once (fewer for calls of fewer rows); otherwise kSeparate.
AddBwdPlan plan_add_bwd(const AddBwdCall& call, const DeviceLimits& device, const AddBwdOccupancy& occupancy);

}  // namespace reference_ops
