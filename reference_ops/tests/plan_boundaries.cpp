// The shapes where a planner of csrc/norm_plan.cpp (plan_fwd, plan_bwd, and the fused ops'
// plan_add_fwd, plan_add_bwd) changes its answer: scanned over the
// widths at a few row counts and over the row counts at a few widths, on the limits of the GPU
// given on the command line. scripts/sanitize_cases.py runs every shape printed here and its two
// neighbours under compute-sanitizer, so each side of every variant, pack, warp, block and
// cluster boundary is checked. The backward's occupancy comes from a model of an SM (the real
// kernels' register counts are not known to a CPU program), so its boundaries are the model's.
//
//   plan_boundaries SMS L2_BYTES MAX_CLUSTER SMEM_OPTIN SMEM_PER_SM SMEM_RESERVED
// prints lines "<planner> <x_bytes> <param_bytes> <ln|rms> <weight> <bias> <rows> <cols> <y_bytes>";
// for the fused planners (add_fwd, add_bwd) param_bytes is the residual stream's (and weight's).
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <tuple>
#include <vector>

#include "norm_plan.h"
#include "plan_model.h"

using reference_ops::AddBwdCall;
using reference_ops::AddFwdCall;
using reference_ops::BwdCall;
using reference_ops::BwdPlan;
using reference_ops::DeviceLimits;
using reference_ops::FwdCall;
using reference_ops::FwdPlan;
using reference_ops::Norm;
using reference_ops::plan_model::StubAddOccupancy;
using reference_ops::plan_model::StubOccupancy;

namespace {

constexpr uintptr_t kBase = 1 << 20;

// What makes two plans different kernels or launch shapes (not the grid, which grows with every row).
using Key = std::tuple<int, int, int, int, int, int, int, int, int>;

Key fwd_key(const FwdPlan& p) {
  return {static_cast<int>(p.variant),
          p.vec,
          p.packs_per_thread,
          p.threads_per_row,
          p.groups,
          p.cluster,
          p.span_tables,
          p.plain_y,
          0};
}

Key bwd_key(const BwdPlan& p) {
  return {static_cast<int>(p.variant),
          p.packs_per_thread,
          p.threads_per_row,
          p.groups,
          p.threads,
          p.cluster,
          p.stages,
          p.sum_vec,
          p.valid};
}

enum class Planner : int { kFwd, kBwd, kAddFwd, kAddBwd };
const char* const kPlannerNames[] = {"fwd", "bwd", "add_fwd", "add_bwd"};

struct Config {
  int x_bytes;
  int param_bytes;  // the fused ops: the residual stream's
  int y_bytes;
  Norm norm;
  bool weight;
  bool bias;
};

Key plan_key(Planner planner, const Config& c, int64_t rows, int64_t cols, const DeviceLimits& d,
             const StubOccupancy& occ) {
  const uintptr_t w = c.weight ? 3 * kBase : 0;
  const uintptr_t b = c.bias ? 4 * kBase : 0;
  if (planner == Planner::kAddFwd) {
    const AddFwdCall call{rows,      cols, c.x_bytes, c.param_bytes, c.param_bytes, c.y_bytes, c.norm, kBase,
                          2 * kBase, w,    b,         5 * kBase,     6 * kBase};
    const auto p = reference_ops::plan_add_fwd(call, d);
    return {static_cast<int>(p.variant), p.vec, p.packs_per_thread, p.threads_per_row, p.threads, 0, 0, 0, 0};
  }
  if (planner == Planner::kAddBwd) {
    const AddBwdCall call{rows,      cols,      c.x_bytes, c.param_bytes, c.param_bytes,
                          c.y_bytes, c.norm,    c.weight,  c.bias,        kBase,
                          2 * kBase, 5 * kBase, w,         6 * kBase,     7 * kBase};
    const auto p = reference_ops::plan_add_bwd(call, d, StubAddOccupancy(d, c.param_bytes));
    return {static_cast<int>(p.variant),
            p.vec,
            p.packs_per_thread,
            p.threads_per_row,
            p.threads,
            p.sum_vec,
            p.sum_parts > 0,
            0,
            0};
  }
  if (planner == Planner::kFwd) {
    const FwdCall call{rows, cols, c.x_bytes, c.param_bytes, c.norm, kBase, 2 * kBase, w, b};
    return fwd_key(reference_ops::plan_fwd(call, d));
  }
  const BwdCall call{rows, cols, c.x_bytes, c.param_bytes, c.norm, c.weight, c.bias, kBase, 5 * kBase, 6 * kBase, w};
  return bwd_key(reference_ops::plan_bwd(call, d, occ));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: %s SMS L2_BYTES MAX_CLUSTER SMEM_OPTIN SMEM_PER_SM SMEM_RESERVED\n", argv[0]);
    return 2;
  }
  const DeviceLimits device{std::atoi(argv[1]),  std::atoll(argv[2]), std::atoi(argv[3]),
                            std::atoll(argv[4]), std::atoll(argv[5]), std::atoll(argv[6])};
  const StubOccupancy occupancy(device);
  // Widest row scanned: past the largest cluster's registers for every dtype (uncached beyond).
  const int64_t max_cols = (int64_t{1} << 18) + 1024;
  const int64_t row_counts[] = {1, 3};
  // Row counts scanned at these widths, up to 2^22 elements a call: past the one-wave and few-row
  // limits, short of the L2's size (there only y's cache hint changes).
  const int64_t widths[] = {1, 7, 8, 64, 100, 512, 1000, 1024, 4095, 4096, 8192};
  const int64_t max_elems = int64_t{1} << 22;
  // (x, parameters or stream, y) bytes: the norm ops' dtypes, then the fused ops' (a float32
  // stream beside 16-bit x, y in either).
  const std::vector<std::array<int, 3>> norm_types = {{2, 2, 2}, {2, 4, 2}, {4, 4, 4}, {8, 8, 8}};
  const std::vector<std::array<int, 3>> add_types = {{2, 2, 2}, {4, 4, 4}, {8, 8, 8}, {2, 4, 4}, {2, 4, 2}};
  std::set<std::tuple<int, int, int, int, int, int, int64_t, int64_t, int>> points;
  for (const bool fused : {false, true}) {
    for (const auto& t : fused ? add_types : norm_types) {
      for (const Norm norm : {Norm::kLayerNorm, Norm::kRms}) {
        for (int params = 0; params < 4; ++params) {
          const Config c{t[0], t[1], t[2], norm, (params & 1) != 0, (params & 2) != 0};
          if (norm == Norm::kRms && c.bias) {
            continue;
          }
          for (const Planner fwd : fused ? std::vector<Planner>{Planner::kAddFwd, Planner::kAddBwd}
                                         : std::vector<Planner>{Planner::kFwd, Planner::kBwd}) {
            auto add = [&](int64_t rows, int64_t cols) {
              points.insert({static_cast<int>(fwd), c.x_bytes, c.param_bytes, norm == Norm::kRms, c.weight, c.bias,
                             rows, cols, c.y_bytes});
            };
            // The planner treats widths by their remainder modulo the pack (a multiple of it, or a
            // row span starting at one of the pack's offsets): each width is compared with the
            // width one pack narrower, which has the same remainder.
            const int64_t vec = 16 / (fused ? c.param_bytes : c.x_bytes);
            for (const int64_t rows : row_counts) {
              for (int64_t rem = 0; rem < vec; ++rem) {
                const int64_t first = rem == 0 ? vec : rem;
                Key last = plan_key(fwd, c, rows, first, device, occupancy);
                for (int64_t cols = first + vec; cols <= max_cols; cols += vec) {
                  const Key k = plan_key(fwd, c, rows, cols, device, occupancy);
                  if (k != last) {
                    add(rows, cols);
                  }
                  last = k;
                }
              }
            }
            for (const int64_t cols : widths) {
              Key last = plan_key(fwd, c, 1, cols, device, occupancy);
              for (int64_t rows = 2; rows * cols <= max_elems; ++rows) {
                const Key k = plan_key(fwd, c, rows, cols, device, occupancy);
                if (k != last) {
                  add(rows, cols);
                }
                last = k;
              }
            }
          }
        }
      }
    }
  }
  for (const auto& [planner, xb, pb, rms, w, b, rows, cols, yb] : points) {
    std::printf("%s %d %d %s %d %d %lld %lld %d\n", kPlannerNames[planner], xb, pb, rms ? "rms" : "ln", w, b,
                static_cast<long long>(rows), static_cast<long long>(cols), yb);
  }
  return 0;
}
