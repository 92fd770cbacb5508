// The rowwise planner's answers, checked without a GPU (tests/test_plans.py builds and runs this with
// the host compiler): every call of a grid (widths 0 to 2^20, three dtypes, ops of one to three
// inputs and no to three passes, aligned, mid-pack and mixed offsets, three GPUs by an occupancy
// model) maps to a kernel the engine builds that holds its row, within the hardware's limits; and
// known calls get today's launches.
#include "engine/rowwise_plan.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

namespace rowwise = cuop_my_cuda_op::rowwise;
using rowwise::Gpu;
using rowwise::OpFacts;
using rowwise::Plan;
using rowwise::Rows;
using rowwise::Variant;

int failures = 0;

void fail(const std::string& what) {
  if (++failures <= 20) {
    std::fprintf(stderr, "FAIL %s\n", what.c_str());
  }
}

// ---------------------------------------------------------------------------------------------
// An occupancy model of an sm_90 SM (64K registers, 2048 threads, 32 blocks, 228 KB of shared
// memory, 1 KB of it reserved per block), with the registers ptxas gives the starter's kernels
// (forward: one input, two passes; backward: two inputs, one pass) and an estimate for other ops.

int registers(Variant variant, const OpFacts& op, int packs) {
  const bool forward = op.inputs == 1 && op.passes == 2;
  const bool backward = op.inputs == 2 && op.passes == 1;
  const int log2_packs = packs >= 8 ? 3 : packs >= 4 ? 2 : packs >= 2 ? 1 : 0;
  if (variant == Variant::kCluster) {
    return 64;
  }
  if (variant == Variant::kStaged) {
    return op.elem_bytes == 4 ? 55 : op.elem_bytes == 2 ? 60 : 64;
  }
  if (forward) {
    const int f32[] = {28, 32, 46, 64}, f16[] = {31, 46, 64, 64}, f64[] = {32, 32, 48, 64};
    return (op.elem_bytes == 4 ? f32 : op.elem_bytes == 2 ? f16 : f64)[log2_packs];
  }
  if (backward) {
    const int f32[] = {28, 54, 60}, f16[] = {29, 54, 60}, f64[] = {32, 52, 64};
    return (op.elem_bytes == 4 ? f32 : op.elem_bytes == 2 ? f16 : f64)[log2_packs];
  }
  return std::min(64, 24 + 4 * packs * op.inputs);
}

int resident_model(Variant variant, const OpFacts& op, int packs, int threads, int smem) {
  const int warps = threads / 32;
  const int warp_registers = (registers(variant, op, packs) * 32 + 255) / 256 * 256;
  const int by_registers = 65536 / warp_registers / warps;
  const int by_threads = 2048 / threads;
  const int by_smem = 233472 / (smem + 1024 + 1024);
  return std::min({32, by_registers, by_threads, by_smem});
}

// GPUs: an H100 (slower memory per SM), an H200 (faster), an A100 (slower, no clusters).
const Gpu kH100{false, true, 232448};
const Gpu kH200{true, true, 232448};
const Gpu kA100{false, false, 166912};

Plan plan(int64_t rows, int64_t cols, const OpFacts& op, const Gpu& gpu, bool same_offset = true,
          int first_offset = 0) {
  const auto resident = [&](Variant variant, int packs, int threads, int ranks) {
    if (ranks > 1 && !gpu.clusters) {
      return 0;
    }
    const int smem = variant == Variant::kStaged
                         ? op.inputs * rowwise::staged_smem_packs(op.inputs) * rowwise::kVecBytes * threads
                         : 0;
    return smem > gpu.smem_per_block ? 0 : resident_model(variant, op, packs, threads, smem);
  };
  return rowwise::plan_rows(Rows{rows, cols, same_offset, first_offset}, op, gpu, resident);
}

std::string describe(const Plan& p) {
  return std::string(rowwise::variant_name(p.variant)) + " packs " + std::to_string(p.packs) + "+" +
         std::to_string(p.staged) + " threads " + std::to_string(p.threads) + " ranks " + std::to_string(p.ranks) +
         " blocks " + std::to_string(p.blocks) + " smem " + std::to_string(p.smem);
}

// What every plan must be: a kernel the engine builds, launchable, holding the whole row.
void check(const Plan& p, int64_t rows, int64_t cols, const OpFacts& op, const Gpu& gpu, bool same_offset,
           int first_offset) {
  const int vec = rowwise::kVecBytes / op.elem_bytes;
  const int64_t row_packs = cols / p.vec;
  bool ok = rowwise::built(p.variant, op, p.packs);
  ok = ok && p.vec == (same_offset ? vec : 1) && (p.vec == 1) == (p.variant == Variant::kWideElements);
  ok = ok && p.threads >= 32 && p.threads <= 1024 && p.threads % 32 == 0;
  ok = ok && (p.ranks == 1 || ((p.ranks == 2 || p.ranks == 4 || p.ranks == 8) && p.variant == Variant::kCluster &&
                               gpu.clusters && op.passes == 1));
  ok = ok && p.blocks == std::min<int64_t>(rows, std::numeric_limits<int32_t>::max() / p.ranks) * p.ranks;
  switch (p.variant) {
    case Variant::kRegisters:
    case Variant::kRegistersWhole:
    case Variant::kCluster:
      ok = ok && int64_t(p.threads) * p.packs * p.ranks >= row_packs && p.staged == 0 && p.smem == 0;
      break;
    case Variant::kStaged:
      ok = ok && int64_t(p.threads) * (p.packs + p.staged) >= row_packs && p.staged > 0 &&
           p.smem == op.inputs * p.staged * rowwise::kVecBytes * p.threads && p.smem <= gpu.smem_per_block;
      break;
    case Variant::kWide:
    case Variant::kWideElements:
      ok = ok && p.staged == 0 && p.smem == 0 && p.threads == rowwise::whole_warps(std::min<int64_t>(row_packs, 1024));
      break;
  }
  if (p.variant == Variant::kRegistersWhole) {
    ok = ok && op.elem_bytes == 2 && first_offset == 0 && cols % vec == 0;
  }
  if (p.variant != Variant::kWide && p.variant != Variant::kWideElements) {
    const int smem = p.variant == Variant::kStaged ? p.smem : 0;
    const Variant asked = p.variant == Variant::kRegistersWhole ? Variant::kRegisters : p.variant;
    ok = ok && resident_model(asked, op, p.packs, p.threads, smem) > 0;
  }
  if (!ok) {
    fail("rows " + std::to_string(rows) + " cols " + std::to_string(cols) + " inputs " + std::to_string(op.inputs) +
         " passes " + std::to_string(op.passes) + " bytes " + std::to_string(op.elem_bytes) + " offset " +
         (same_offset ? "" : "mixed ") + std::to_string(first_offset) + ": " + describe(p));
  }
}

// Today's launches of the starter's ops for the generated benchmark's shapes and others, from the
// rules in rowwise_plan.h.
struct Known {
  const char* why;
  int64_t rows, cols;
  OpFacts op;
  const Gpu* gpu;
  Variant variant;
  int packs, threads, ranks;
};

const OpFacts kFwd32{1, 2, 4}, kFwd16{1, 2, 2}, kFwd64{1, 2, 8};
const OpFacts kBwd32{2, 1, 4}, kBwd16{2, 1, 2}, kBwd64{2, 1, 8};

// clang-format off
const Known kKnown[] = {
  {"short rows take 2 packs",                65536, 1024,  kFwd32, &kH100, Variant::kRegisters,       2, 128, 1},
  {"16-bit short rows, fast memory: keep 4", 65536, 1024,  kFwd16, &kH200, Variant::kRegistersWhole,  4, 32,  1},
  {"16-bit short rows, slow memory: 2",      65536, 1024,  kFwd16, &kH100, Variant::kRegistersWhole,  2, 64,  1},
  {"fast memory: 8 packs, 8 warps",          8192,  8192,  kFwd32, &kH200, Variant::kRegisters,       8, 256, 1},
  {"16-bit, fast memory: 8 packs not in 2",  16384, 4096,  kFwd16, &kH200, Variant::kRegistersWhole,  4, 128, 1},
  {"fast memory: 16-bit odd width",          8191,  8191,  kFwd16, &kH200, Variant::kRegisters,       8, 128, 1},
  {"most blocks, slow memory",               8192,  8192,  kFwd32, &kH100, Variant::kRegisters,       4, 512, 1},
  {"staged: alone even at 8 packs",          4096,  16384, kFwd64, &kH200, Variant::kStaged,          4, 512, 1},
  {"float64 8 packs when alone, slow mem",   4096,  16384, kFwd64, &kH100, Variant::kRegisters,       8, 1024, 1},
  {"forward too wide: read twice",           1024,  65536, kFwd32, &kH200, Variant::kWide,            0, 1024, 1},
  {"backward spread within 256 threads",     16384, 4096,  kBwd64, &kH200, Variant::kRegisters,       4, 512, 1},
  {"backward spread within 1024 threads",    16384, 4096,  kBwd32, &kH100, Variant::kRegisters,       1, 1024, 1},
  {"backward 16-bit spread, fast memory",    16384, 4096,  kBwd16, &kH200, Variant::kRegistersWhole,  2, 256, 1},
  {"backward odd width: most blocks",        8191,  8191,  kBwd16, &kH200, Variant::kRegisters,       4, 256, 1},
  {"backward split over a cluster",          2048,  32768, kBwd32, &kH200, Variant::kCluster,         4, 512, 4},
  {"backward float64 split",                 4096,  16384, kBwd64, &kH200, Variant::kCluster,         4, 512, 4},
  {"backward without clusters: wide",        4096,  16384, kBwd64, &kA100, Variant::kWide,            0, 1024, 1},
};
// clang-format on

struct Offsets {
  bool same;
  int first;
};

int check_plans() {
  int64_t cases = 0;
  std::vector<int64_t> widths;
  for (int64_t cols = 0; cols <= (1 << 16); ++cols) {
    widths.push_back(cols);
  }
  for (int64_t cols = (1 << 16) + 1; cols <= (1 << 20); cols += 61) {
    widths.push_back(cols);
  }
  for (int64_t power = 1 << 16; power <= (1 << 20); power *= 2) {
    for (int64_t near = power - 8; near <= power + 8; ++near) {
      widths.push_back(near);
    }
  }
  // (inputs, passes): the starter's forward and backward, and ops of other shapes.
  const OpFacts shapes[] = {OpFacts{1, 2, 0}, OpFacts{2, 1, 0}, OpFacts{1, 1, 0}, OpFacts{3, 1, 0},
                            OpFacts{2, 2, 0}, OpFacts{3, 2, 0}, OpFacts{1, 0, 0}, OpFacts{2, 3, 0}};
  const Gpu* gpus[] = {&kH100, &kH200, &kA100};
  const int64_t row_counts[] = {1, 7, int64_t(1) << 33};
  for (const OpFacts& shape : shapes) {
    for (const int bytes : {2, 4, 8}) {
      const OpFacts op{shape.inputs, shape.passes, bytes};
      for (const Gpu* gpu : gpus) {
        for (const int64_t cols : widths) {
          const int64_t rows = row_counts[cols % 3];
          // Every tensor at one offset (the pack's start, or mid-pack), or at different ones.
          const Offsets offsets[] = {Offsets{true, 0}, Offsets{true, int(cols) % 8 * bytes % 16}, Offsets{false, 0}};
          for (const Offsets& offset : offsets) {
            const Plan p = plan(rows, cols, op, *gpu, offset.same, offset.first);
            check(p, rows, cols, op, *gpu, offset.same, offset.first);
            ++cases;
          }
        }
      }
    }
  }
  for (const Known& known : kKnown) {
    const Plan p = plan(known.rows, known.cols, known.op, *known.gpu);
    if (p.variant != known.variant || p.packs != known.packs || p.threads != known.threads || p.ranks != known.ranks) {
      fail(std::string(known.why) + ": " + describe(p));
    }
  }
  std::printf("rowwise plans: %lld cases, %zu known launches, %d failed\n", static_cast<long long>(cases),
              sizeof(kKnown) / sizeof(kKnown[0]), failures);
  return failures == 0 ? 0 : 1;
}

int main() { return check_plans(); }
