// CPU test of plan_fwd (csrc/norm_plan.cpp), built and run by test_plan.py: named shapes map to
// their variants, and over every width up to 2^17 (and a sample up to 2^22) every plan names a
// kernel that is built, with a launch shape that covers the row; every built kernel is planned
// for some shape (none is dead).
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <tuple>

#include "norm_plan.h"

using reference_ops::DeviceLimits;
using reference_ops::FwdCall;
using reference_ops::FwdPlan;
using reference_ops::FwdVariant;
using reference_ops::Norm;

namespace {

int failures = 0;

void fail(const std::string& what) {
  if (++failures <= 20) {
    std::printf("FAIL %s\n", what.c_str());
  }
}

constexpr DeviceLimits kH100{132, 50LL << 20, 8};
constexpr DeviceLimits kA100{108, 40LL << 20, 1};
constexpr uintptr_t kX = 1 << 20;
constexpr uintptr_t kY = 2 << 20;
constexpr uintptr_t kWeight = 3 << 20;
constexpr uintptr_t kBias = 4 << 20;

// dtype sizes of (x, parameters): float32, float64, float16 / bfloat16, 16-bit x + float params.
constexpr int kTypes[][2] = {{4, 4}, {8, 8}, {2, 2}, {2, 4}};

FwdCall call(int x_bytes, int param_bytes, int64_t rows, int64_t cols, Norm norm, bool weight, bool bias) {
  return {rows, cols, x_bytes, param_bytes, norm, kX, kY, weight ? kWeight : 0, bias ? kBias : 0};
}

std::string describe(const FwdCall& c, const FwdPlan& p) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "x %dB params %dB %s %lldx%lld w=%d b=%d -> %s packs=%d tpr=%d groups=%d cluster=%d",
                c.x_bytes, c.param_bytes, c.norm == Norm::kRms ? "rms" : "ln", static_cast<long long>(c.rows),
                static_cast<long long>(c.cols), c.weight != 0, c.bias != 0, reference_ops::fwd_variant_name(p.variant),
                p.packs_per_thread, p.threads_per_row, p.groups, p.cluster);
  return buf;
}

void expect(const char* name, const FwdCall& c, const DeviceLimits& d, FwdVariant v, int packs) {
  const FwdPlan p = reference_ops::plan_fwd(c, d);
  if (p.variant != v || (packs != 0 && p.packs_per_thread != packs)) {
    fail(std::string(name) + ": " + describe(c, p) + ", expected " + reference_ops::fwd_variant_name(v));
  }
}

// One representative shape per variant (H100 limits unless named).
void named_shapes() {
  const Norm ln = Norm::kLayerNorm;
  const Norm rms = Norm::kRms;
  expect("bf16 LN 4096x4096", call(2, 2, 4096, 4096, ln, true, true), kH100, FwdVariant::kRows, 4);
  expect("fp32 LN 4096x4096", call(4, 4, 4096, 4096, ln, true, true), kH100, FwdVariant::kRows, 4);
  expect("bf16 + fp32 params", call(2, 4, 4096, 1024, ln, true, true), kH100, FwdVariant::kRows, 4);
  expect("bf16 LN 4096x4095", call(2, 2, 4096, 4095, ln, true, true), kH100, FwdVariant::kRowsSpan, 4);
  expect("bf16 LN 4096x32768", call(2, 2, 4096, 32768, ln, true, true), kH100, FwdVariant::kRowsFull, 8);
  expect("bf16 RMS 4096x32768", call(2, 2, 4096, 32768, rms, true, false), kH100, FwdVariant::kRows, 8);
  expect("bf16 LN 65536x256", call(2, 2, 65536, 256, ln, true, true), kH100, FwdVariant::kGroup8, 4);
  expect("bf16 LN 65536x512", call(2, 2, 65536, 512, ln, true, true), kH100, FwdVariant::kGroup16, 4);
  expect("bf16 RMS 65536x1024", call(2, 2, 65536, 1024, rms, true, false), kH100, FwdVariant::kGroup32, 4);
  expect("fp32 RMS 65536x128", call(4, 4, 65536, 128, rms, true, false), kH100, FwdVariant::kGroup8, 4);
  expect("bf16 LN 1x8192", call(2, 2, 1, 8192, ln, true, true), kH100, FwdVariant::kFewRowsFull, 2);
  expect("bf16 LN 4x6144", call(2, 2, 4, 6144, ln, true, true), kH100, FwdVariant::kFewRows, 2);
  expect("bf16 RMS 1x8192", call(2, 2, 1, 8192, rms, true, false), kH100, FwdVariant::kRows, 2);
  expect("fp32 LN 1024x65536", call(4, 4, 1024, 65536, ln, true, true), kH100, FwdVariant::kCluster, 8);
  expect("bf16 LN 1024x65536", call(2, 2, 1024, 65536, ln, true, true), kH100, FwdVariant::kClusterFull, 8);
  expect("fp32 LN 64x200001", call(4, 4, 64, 200001, ln, true, true), kH100, FwdVariant::kClusterSpan, 8);
  expect("fp32 LN 64x2^20", call(4, 4, 64, 1 << 20, ln, true, true), kH100, FwdVariant::kUncached, 0);
  expect("fp32 LN 1024x65536 sm_80", call(4, 4, 1024, 65536, ln, true, true), kA100, FwdVariant::kUncached, 0);
  FwdCall unaligned = call(2, 2, 4096, 4096, ln, true, true);
  unaligned.x += 2;
  expect("x not 16-byte aligned", unaligned, kH100, FwdVariant::kUncachedElems, 0);
  FwdCall weight_off = call(2, 2, 4096, 4096, ln, true, true);
  weight_off.weight += 2;
  expect("weight not 16-byte aligned", weight_off, kH100, FwdVariant::kUncachedElems, 0);
}

bool is_pow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

// Every plan names a built kernel and a launch shape the kernel can take.
void check_plan(const FwdCall& c, const DeviceLimits& d, std::set<std::tuple<int, int, int, int, int>>& planned) {
  const FwdPlan p = reference_ops::plan_fwd(c, d);
  const reference_ops::FwdTraits t = reference_ops::fwd_traits(p.variant);
  if (!t.registers) {
    const bool aligned_packs = c.cols % (reference_ops::kPackBytes / c.x_bytes) == 0;
    if (p.variant == FwdVariant::kUncached && !aligned_packs) {
      fail("packed uncached kernel for a span: " + describe(c, p));
    }
    return;
  }
  planned.insert({static_cast<int>(p.variant), static_cast<int>(p.norm), p.packs_per_thread, c.x_bytes, c.param_bytes});
  if (!reference_ops::fwd_rows_kernel_exists(p.variant, p.norm, p.packs_per_thread, c.x_bytes, c.param_bytes)) {
    fail("no kernel built for " + describe(c, p));
  }
  const int64_t vec = reference_ops::kPackBytes / c.x_bytes;
  const int64_t packs = c.cols / vec + (t.span ? reference_ops::kSpanExtraFwdPacks : 0);
  const int slots = p.packs_per_thread + (t.span ? 1 : 0);
  const int64_t held = static_cast<int64_t>(p.threads_per_row) * slots * p.cluster;
  const int max_threads = t.early ? reference_ops::kRowMaxThreads : reference_ops::kMaxThreadsPerRow;
  if (!is_pow2(p.threads_per_row) || p.threads() > max_threads || held < packs || p.clusters * p.groups < c.rows ||
      p.cluster > d.max_cluster || t.cluster != (p.cluster > 1) || (t.group != 0 && t.group != p.threads_per_row) ||
      (t.full && static_cast<int64_t>(p.threads_per_row) * p.packs_per_thread * p.cluster != packs) ||
      (p.cluster > 1 && p.threads_per_row < reference_ops::kWarpSize)) {
    fail("launch shape of " + describe(c, p));
  }
}

void sweep() {
  std::set<std::tuple<int, int, int, int, int>> planned;
  const DeviceLimits devices[] = {kH100, kA100};
  const int64_t row_counts[] = {1, 7, 132, 133, 100000};
  for (const auto& types : kTypes) {
    for (const Norm norm : {Norm::kLayerNorm, Norm::kRms}) {
      for (int params = 0; params < 4; ++params) {
        const bool weight = (params & 1) != 0;
        const bool bias = (params & 2) != 0;
        if (norm == Norm::kRms && bias) {
          continue;
        }
        for (const DeviceLimits& d : devices) {
          for (const int64_t rows : row_counts) {
            for (int64_t cols = 1; cols <= (int64_t{1} << 22); cols += cols < (1 << 17) ? 1 : 61) {
              check_plan(call(types[0], types[1], rows, cols, norm, weight, bias), d, planned);
            }
          }
        }
      }
    }
  }
  // Every kernel built is planned for some shape.
  int built = 0;
  for (const auto& types : kTypes) {
    for (int v = 0; v < reference_ops::kFwdVariantCount; ++v) {
      for (const Norm norm : {Norm::kLayerNorm, Norm::kRms}) {
        for (const int packs : {1, 2, 4, 8}) {
          const FwdVariant variant = static_cast<FwdVariant>(v);
          if (!reference_ops::fwd_rows_kernel_exists(variant, norm, packs, types[0], types[1])) {
            continue;
          }
          ++built;
          if (planned.count({v, static_cast<int>(norm), packs, types[0], types[1]}) == 0) {
            fail(std::string("built but never planned: ") + reference_ops::fwd_variant_name(variant) + " " +
                 (norm == Norm::kRms ? "rms" : "ln") + " packs " + std::to_string(packs) + " x " +
                 std::to_string(types[0]) + "B params " + std::to_string(types[1]) + "B");
          }
        }
      }
    }
  }
  std::printf("%d register kernels per arch (bfloat16 and float16 count once), %zu planned\n", built, planned.size());
}

void table_order() {
  for (int v = 0; v < reference_ops::kFwdVariantCount; ++v) {
    if (static_cast<int>(reference_ops::kFwdVariants[v].variant) != v) {
      fail("kFwdVariants is not in FwdVariant order at " + std::to_string(v));
    }
  }
}

}  // namespace

int main() {
  table_order();
  named_shapes();
  sweep();
  std::printf("%s (%d failures)\n", failures == 0 ? "OK" : "FAILED", failures);
  return failures == 0 ? 0 : 1;
}
