// How the rowwise engine launches a call: one pure function, plan_rows, of what the call moves, what
// the op is like and what the GPU is like, which decides everything about the launch (the kernel
// variant, packs per thread, threads, blocks per row, the grid, shared memory, the row order), with
// no override after it. The launch code in rowwise.cuh asks the GPU its facts, calls it and launches
// what it says. Plain C++17, no CUDA or torch, so that tests/test_plans.py builds
// tests/rowwise_plan_test.cpp with the host compiler and checks its answers on any machine.
//
// The rules were tuned on the starter's two ops: its forward (one input, two passes: a maximum, then
// a sum) and its backward (two inputs, one pass). They are keyed on what the op declares (its inputs
// and passes), not on which op it is: a new op takes the rules of its pass count. The performance page
// (docs/performance.md) has the measurements behind each rule.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

namespace cuop_my_cuda_op::rowwise {

constexpr int kWarpSize = 32;
// Bytes per vector access: 16 bytes compile to one LDG.128 / STG.128 per thread.
constexpr int kVecBytes = 16;
// Threads per row block: at most 1024, the hardware's limit.
constexpr int kMaxThreads = 1024;
constexpr int kMaxWarps = kMaxThreads / kWarpSize;
// Blocks a row may be split over: a cluster of at most 8, the size every sm_90 GPU can launch.
constexpr int kMaxRanks = 8;
// The most inputs an op may read per element: the register kernels hold at least one pack of each.
constexpr int kMaxInputs = 3;

// Packs above which a count is taken only for rows that fewer leave a block alone on its SM (the
// extra registers cost rows that share an SM anyway).
constexpr int kPacksAlone = 4;
// Several passes: rows of at most kShortRowPacks * kShortRowWarps warps' worth of packs take
// kShortRowPacks packs a thread (see plan_rows).
constexpr int kShortRowPacks = 2;
constexpr int kShortRowWarps = 4;
// One pass, fast memory: the most threads a block that holds a row takes (see plan_rows).
constexpr int kFastMemorySpreadThreads = 256;

// The kernels the engine builds; plan_rows names one per call.
enum class Variant : int {
  kRegisters,       // the row in registers: `packs` packs of each input per thread, one block per row
  kRegistersWhole,  // the same for 16-bit rows of whole packs only, built without the edge code
  kStaged,          // `packs` packs in registers and `staged` more in shared memory (several passes)
  kCluster,         // the row in the registers of a cluster of `ranks` blocks (one pass, sm_90)
  kWide,            // rows too wide for registers: read again for each pass and for the outputs
  kWideElements,    // the same element by element, for tensors whose rows start at different offsets
};

constexpr const char* variant_name(Variant v) {
  switch (v) {
    case Variant::kRegisters:
      return "registers";
    case Variant::kRegistersWhole:
      return "registers_whole";
    case Variant::kStaged:
      return "staged";
    case Variant::kCluster:
      return "cluster";
    case Variant::kWide:
      return "wide";
    case Variant::kWideElements:
      return "wide_elements";
  }
  return "?";
}

// What the planner knows of the op (rowwise.cuh reads it off the row functor).
struct OpFacts {
  int inputs = 1;      // tensors read per element
  int passes = 1;      // reductions over the row, one after another
  int elem_bytes = 4;  // bytes per element of every tensor
};

// What one call moves: `rows` rows of `cols` elements; `same_offset`: every tensor's rows start at
// the same offset within 16 bytes, `first_offset`: that offset, in bytes.
struct Rows {
  int64_t rows = 0;
  int64_t cols = 0;
  bool same_offset = true;
  int first_offset = 0;
};

// What the GPU is like: whether its memory is fast per SM (engine/gpu.h), which needs more bytes in
// flight; whether it runs thread-block clusters (sm_90 and newer); the shared memory one block may
// take.
struct Gpu {
  bool fast_memory = false;
  bool clusters = false;
  int64_t smem_per_block = 48 * 1024;
};

// The launch: the kernel variant, `vec` elements per pack, `packs` per thread of each input in
// registers (0 for the wide variants), `staged` more in shared memory, `threads` per block (whole
// warps), `ranks` blocks per row (a cluster when more than one), `blocks` in the grid, `smem` bytes
// of dynamic shared memory per block.
struct Plan {
  Variant variant = Variant::kWideElements;
  int vec = 1;
  int packs = 0;
  int staged = 0;
  int threads = kWarpSize;
  int ranks = 1;
  int64_t blocks = 0;
  int smem = 0;
};

// An op of one pass (or none) takes rows last to first: the rows written last (by the op that made
// its inputs, the forward when a backward follows it) are the ones still in L2, and blocks start in
// order, so the first blocks find their rows there. Ops of several passes were tuned first to last.
// A rule of the op, not of the call: the kernels take it as a constant, since a runtime flag let
// ptxas schedule the first pack's math ahead of the row's last loads, which then waited for it.
constexpr bool rows_last_to_first(int passes) { return passes <= 1; }

// Packs a thread holds in registers, at most: as many as keep the packs it loads within 32 registers
// (a pack is four 32-bit words in every dtype: 16-bit elements stay two to a word until used), half
// the 64 registers a 1024-thread block allows: 8 packs of one input, 4 of each of two, 2 of three.
constexpr int max_packs(int inputs) {
  constexpr int kWordsPerPack = kVecBytes / 4;
  int packs = 32 / (std::max(1, inputs) * kWordsPerPack);
  int power = 1;
  while (power * 2 <= packs) {
    power *= 2;
  }
  return packs > 0 ? power : 0;
}

// The staged kernel: a quarter of a thread's packs in registers, three quarters in shared memory, so
// a block holds twice the row in half the threads.
constexpr int staged_register_packs(int inputs) { return max_packs(inputs) / 2; }
constexpr int staged_smem_packs(int inputs) { return max_packs(inputs) * 3 / 2; }

// Whether the engine builds `variant` with `packs` packs per thread for this op: the launch code
// builds exactly these, and the planner test checks that every plan names one of them.
constexpr bool built(Variant variant, const OpFacts& op, int packs) {
  const int most = max_packs(op.inputs);
  const bool power_of_two = packs > 0 && (packs & (packs - 1)) == 0;
  switch (variant) {
    case Variant::kRegisters:
      return power_of_two && packs <= most;
    case Variant::kRegistersWhole:
      return op.elem_bytes == 2 && power_of_two && packs <= most;
    case Variant::kStaged:
      return op.passes > 1 && packs == staged_register_packs(op.inputs);
    case Variant::kCluster:
      return op.passes == 1 && packs == most;
    case Variant::kWide:
    case Variant::kWideElements:
      return packs == 0;
  }
  return false;
}

// Threads rounded up to whole warps, at least one.
constexpr int whole_warps(int64_t threads) {
  return int(std::max<int64_t>(kWarpSize, (threads + kWarpSize - 1) / kWarpSize * kWarpSize));
}

// The launch of one call. resident(variant, packs, threads, ranks): how many blocks of that kernel
// fit on one SM at once (the occupancy calculator's answer, which counts the kernel's registers and
// shared memory); asked for kRegisters, kStaged and kCluster only.
template <typename Resident>
Plan plan_rows(const Rows& call, const OpFacts& op, const Gpu& gpu, Resident&& resident) {
  Plan plan;
  // Elements per pack: a full 16 bytes when every tensor's rows start at the same offset within 16
  // bytes (true for tensors from the caching allocator, whose blocks are 512-byte aligned), else 1.
  plan.vec = call.same_offset ? kVecBytes / op.elem_bytes : 1;
  const bool several_passes = op.passes > 1;
  const bool fast_memory = gpu.fast_memory;
  const int most_packs = max_packs(op.inputs);
  // Whole packs in a row: at most cols / vec (a row that starts mid-pack has one fewer, and its edge
  // elements go one per thread).
  const int64_t row_packs = call.cols / plan.vec;
  // A row whose tensors' offsets differ, or too wide for any register variant: a wide variant, with a
  // thread per pack (or element) up to a block's limit.
  plan.threads = whole_warps(std::min<int64_t>(row_packs, kMaxThreads));

  // Of 1, 2, 4 ... packs per thread, an op of several passes takes the count that keeps the most
  // blocks resident on an SM, so the most bytes in flight and other blocks' loads to cover one
  // block's reductions; on a tie the most, so fewer threads share a row and each of its reductions
  // takes fewer steps. Registers decide it: a kernel holding more packs needs more of them per
  // thread, and a block of fewer threads. Counts above kPacksAlone only for a row that the smaller
  // ones leave a block alone on its SM.
  // An op of one pass (one reduction a row) takes the fewest packs that one block of at most
  // spread_threads threads holds (or, where none does, of the most threads there are): kernels of
  // one pack of each input fit 32 registers, so full SMs, where the count with the most blocks kept
  // fewer warps on an SM and was slower. On GPUs with faster memory per SM at most
  // kFastMemorySpreadThreads, which want more bytes a thread in flight (more threads were slower,
  // fewer gained nothing). Only for rows without edge elements (a width that is a multiple of the
  // pack): in rows with them, the threads that move them kept the larger blocks waiting at their
  // barriers.
  const int spread_threads = several_passes ? 0 : fast_memory ? kFastMemorySpreadThreads : kMaxThreads;
  const bool spread = spread_threads > 0 && call.cols % plan.vec == 0;
  // A row that no block holds is split over a cluster of 2, 4 or 8 blocks, each holding the most
  // packs per thread: the fewest that leave two blocks on an SM, or else the fewest that hold it at
  // all. Only for ops of one pass: each pass is one exchange between the cluster's blocks, and with
  // two, the split was slower than reading the row again (the wide variant). An op of no pass has
  // nothing to exchange: the wide variant reads its row once, as a cluster would.
  const int max_ranks = op.passes != 1 || !gpu.clusters ? 1 : kMaxRanks;
  int most_blocks = 0;
  for (int ranks = 1; plan.vec > 1 && most_packs > 0 && ranks <= max_ranks; ranks *= 2) {
    for (int packs = ranks > 1 ? most_packs : 1; packs <= most_packs; packs *= 2) {
      if (ranks == 1 && packs > kPacksAlone && most_blocks >= 2) {
        break;
      }
      const int64_t threads = whole_warps((row_packs + packs * ranks - 1) / (packs * ranks));
      const Variant variant = ranks > 1 ? Variant::kCluster : Variant::kRegisters;
      const int blocks_per_sm = threads <= kMaxThreads ? resident(variant, packs, int(threads), ranks) : 0;
      const bool better = spread && ranks == 1
                              ? plan.packs == 0 || plan.threads > spread_threads
                              : blocks_per_sm > most_blocks || (blocks_per_sm == most_blocks && plan.ranks == ranks);
      if (blocks_per_sm > 0 && better) {
        most_blocks = blocks_per_sm;
        plan.packs = packs;
        plan.threads = int(threads);
        plan.ranks = ranks;
      }
    }
    if (most_blocks >= (ranks == 1 ? 1 : 2)) {
      break;
    }
  }

  bool staged = false;
  if (several_passes && plan.packs > 0) {
    // Short rows, those that kShortRowPacks packs a thread hold in at most kShortRowWarps warps,
    // take kShortRowPacks packs: with more, their blocks are of one or two warps, and an SM holds
    // fewer warps of them (its limit of blocks, or their registers); with kShortRowPacks more, which
    // is faster. Wider rows keep the count above (fewer packs were slower there). On GPUs with faster
    // memory per SM 16-bit short rows keep the count above, faster there than fewer.
    const bool short_rows_keep = fast_memory && op.elem_bytes == 2;
    if (!short_rows_keep && plan.packs > kShortRowPacks && row_packs <= kShortRowPacks * kShortRowWarps * kWarpSize) {
      plan.packs = kShortRowPacks;
      plan.threads = whole_warps((row_packs + kShortRowPacks - 1) / kShortRowPacks);
    }
    // Faster memory per SM wants more bytes a thread in flight: there a row takes the most packs per
    // thread wherever that leaves blocks of at least 8 warps, also where fewer would not leave a
    // block alone on its SM. Blocks of fewer warps were slower or level, except 16-bit rows, which
    // take the most packs down to blocks of 4 warps (faster there) but not of 2 (slower).
    const int min_threads = (op.elem_bytes == 2 ? 4 : 8) * kWarpSize;
    const int widest_threads = whole_warps((row_packs + most_packs - 1) / most_packs);
    if (fast_memory && plan.packs < most_packs && widest_threads >= min_threads && widest_threads <= kMaxThreads &&
        resident(Variant::kRegisters, most_packs, widest_threads, 1) > 0) {
      plan.packs = most_packs;
      plan.threads = widest_threads;
    }
    // A row that leaves even a block of the most packs alone on its SM keeps three quarters of its
    // packs in shared memory there, a quarter in registers: half the threads a block and two blocks
    // an SM, one loading while the other computes. Half in registers spilled and was slower; staging
    // rows that share an SM anyway was slower too, so they do not stage.
    const int register_packs = staged_register_packs(op.inputs);
    const int smem_packs = staged_smem_packs(op.inputs);
    const int staged_threads =
        whole_warps((row_packs + register_packs + smem_packs - 1) / (register_packs + smem_packs));
    const int64_t staged_smem = int64_t(op.inputs) * smem_packs * kVecBytes * staged_threads;
    staged = fast_memory && plan.packs == most_packs && staged_smem <= gpu.smem_per_block &&
             resident(Variant::kRegisters, most_packs, plan.threads, 1) == 1 &&
             resident(Variant::kStaged, register_packs, staged_threads, 1) >= 2;
    if (staged) {
      plan.packs = register_packs;
      plan.staged = smem_packs;
      plan.threads = staged_threads;
      plan.smem = int(staged_smem);
    }
  }

  if (staged) {
    plan.variant = Variant::kStaged;
  } else if (plan.vec == 1) {
    plan.variant = Variant::kWideElements;
  } else if (plan.packs == 0) {
    plan.variant = Variant::kWide;
  } else if (plan.ranks > 1) {
    plan.variant = Variant::kCluster;
  } else {
    // 16-bit rows of whole packs (starting on a 16-byte boundary, a width that is a multiple of the
    // pack) take a kernel built without the edge code, which made them faster. Float32 was level
    // with it or slower, and float64's widest kernel slower (scheduled otherwise): they keep one.
    const bool whole = op.elem_bytes == 2 && call.first_offset == 0 && call.cols % plan.vec == 0;
    plan.variant = whole ? Variant::kRegistersWhole : Variant::kRegisters;
  }
  // A block (or cluster) per row: the hardware hands each SM a new row as soon as it has room, so no
  // SM idles at the end. (The kernels stride over rows only past the grid's limit of 2^31 - 1
  // blocks.)
  plan.blocks = std::min<int64_t>(call.rows, std::numeric_limits<int32_t>::max() / plan.ranks) * plan.ranks;
  return plan;
}

}  // namespace cuop_my_cuda_op::rowwise
