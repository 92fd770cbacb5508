// CPU test of plan_fwd and plan_bwd (csrc/norm_plan.cpp), built and run by test_plan.py: named
// shapes map to their variants, and over every width up to 2^17 (and a sample up to 2^22) on the
// limits of several GPUs every plan names a kernel that is built, with a launch shape that covers
// the row; every built kernel is planned for some shape (none is dead). The backward's occupancy
// queries are answered by a model of an SM (StubOccupancy). The fused residual ops' planners
// (plan_add_fwd, plan_add_bwd) the same way, over every width up to 16500 and a sample up to 2^18,
// each plan also compared with the launch rules add_norm.cu had inline (namespace legacy), and
// kSeparate (the separate kernels) exactly for the shapes the fused kernels do not take.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <tuple>

#include "norm_plan.h"
#include "plan_model.h"

using reference_ops::BwdCall;
using reference_ops::BwdKernel;
using reference_ops::BwdPlan;
using reference_ops::BwdVariant;
using reference_ops::DeviceLimits;
using reference_ops::FwdCall;
using reference_ops::FwdPlan;
using reference_ops::FwdVariant;
using reference_ops::Norm;
using reference_ops::plan_model::StubAddOccupancy;
using reference_ops::plan_model::StubOccupancy;

namespace {

int failures = 0;

void fail(const std::string& what) {
  if (++failures <= 20) {
    std::printf("FAIL %s\n", what.c_str());
  }
}

// SMs, L2 bytes, largest cluster, shared memory (opt-in per CTA, per SM, reserved per CTA).
constexpr DeviceLimits kH100{132, 50LL << 20, 8, 227LL << 10, 228LL << 10, 1024};
constexpr DeviceLimits kA100{108, 40LL << 20, 1, 163LL << 10, 164LL << 10, 1024};
// GPUs of less shared memory plan backward kernels that the two above never do: 99 KiB without
// clusters (sm_86, sm_89) the register kernel on 16-bit rows, 99 KiB with clusters (sm_120)
// staged spans of 1 and 2 packs a thread, 64 KiB (sm_75) the register kernel on float64 rows of 2
// packs. Every one of those kernels is built for them.
constexpr DeviceLimits kRtx4090{128, 72LL << 20, 1, 99LL << 10, 100LL << 10, 1024};
constexpr DeviceLimits kRtx5090{170, 96LL << 20, 8, 99LL << 10, 100LL << 10, 1024};
constexpr DeviceLimits kT4{40, 4LL << 20, 1, 64LL << 10, 64LL << 10, 0};
constexpr DeviceLimits kDevices[] = {kH100, kA100, kRtx4090, kRtx5090, kT4};
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
  const int64_t row_counts[] = {1, 7, 132, 133, 100000};
  for (const auto& types : kTypes) {
    for (const Norm norm : {Norm::kLayerNorm, Norm::kRms}) {
      for (int params = 0; params < 4; ++params) {
        const bool weight = (params & 1) != 0;
        const bool bias = (params & 2) != 0;
        if (norm == Norm::kRms && bias) {
          continue;
        }
        for (const DeviceLimits& d : kDevices) {
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

// -----------------------------------------------------------------------------
// Backward
// -----------------------------------------------------------------------------

constexpr uintptr_t kDy = 5 << 20;
constexpr uintptr_t kDx = 6 << 20;

BwdCall bwd_call(int x_bytes, int param_bytes, int64_t rows, int64_t cols, Norm norm, bool weight, bool dbias) {
  return {rows, cols, x_bytes, param_bytes, norm, weight, dbias, kX, kDy, kDx, weight ? kWeight : 0};
}

std::string describe(const BwdCall& c, const BwdPlan& p) {
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "x %dB params %dB %s %lldx%lld dw=%d db=%d -> %s packs=%d tpr=%d groups=%d threads=%d cluster=%d "
                "clusters=%lld stages=%d grid=%lld parts=%lld valid=%d",
                c.x_bytes, c.param_bytes, c.norm == Norm::kRms ? "rms" : "ln", static_cast<long long>(c.rows),
                static_cast<long long>(c.cols), c.dweight, c.dbias, reference_ops::bwd_variant_name(p.variant),
                p.packs_per_thread, p.threads_per_row, p.groups, p.threads, p.cluster,
                static_cast<long long>(p.clusters), p.stages, static_cast<long long>(p.grid),
                static_cast<long long>(p.sum_parts), p.valid);
  return buf;
}

BwdPlan plan_bwd(const BwdCall& c, const DeviceLimits& d) { return reference_ops::plan_bwd(c, d, StubOccupancy(d)); }

// packs 0: any; cluster 0: any.
void expect(const char* name, const BwdCall& c, const DeviceLimits& d, BwdVariant v, int packs, int cluster = 0) {
  const BwdPlan p = plan_bwd(c, d);
  if (p.variant != v || (packs != 0 && p.packs_per_thread != packs) || (cluster != 0 && p.cluster != cluster)) {
    fail(std::string(name) + ": " + describe(c, p) + ", expected " + reference_ops::bwd_variant_name(v));
  }
}

void bwd_table_order() {
  for (int v = 0; v < reference_ops::kBwdVariantCount; ++v) {
    if (static_cast<int>(reference_ops::kBwdVariants[v].variant) != v) {
      fail("kBwdVariants is not in BwdVariant order at " + std::to_string(v));
    }
  }
}

// One or more representative shapes per variant and shape class (H100 limits unless named).
void bwd_named_shapes() {
  const Norm ln = Norm::kLayerNorm;
  const Norm rms = Norm::kRms;
  // Few rows: x up to 4 MiB in one wave; a block per row up to one row per SM.
  expect("bf16 LN 1x4096", bwd_call(2, 2, 1, 4096, ln, true, true), kH100, BwdVariant::kFewRows, 2);
  expect("bf16 LN 64x8192", bwd_call(2, 2, 64, 8192, ln, true, true), kH100, BwdVariant::kFewRows, 2);
  expect("bf16 LN 512x1024", bwd_call(2, 2, 512, 1024, ln, true, true), kH100, BwdVariant::kFewRows, 4);
  expect("fp32 RMS 16x4096", bwd_call(4, 4, 16, 4096, rms, true, false), kH100, BwdVariant::kFewRows, 2);
  expect("fp64 LN 8x1024", bwd_call(8, 8, 8, 1024, ln, true, true), kH100, BwdVariant::kFewRows, 2);
  expect("bf16 + fp32 params 4x2048", bwd_call(2, 4, 4, 2048, ln, true, true), kH100, BwdVariant::kFewRows, 2);
  // Past kFewRowsMaxBytes, or more rows than the column blocks add, or odd N: staged.
  expect("bf16 LN 128x16384 (4 MiB)", bwd_call(2, 2, 128, 16384, ln, true, true), kH100, BwdVariant::kFewRows, 4);
  expect("bf16 LN 129x16384", bwd_call(2, 2, 129, 16384, ln, true, true), kH100, BwdVariant::kStaged, 4);
  expect("fp32 LN 1024x64", bwd_call(4, 4, 1024, 64, ln, true, true), kH100, BwdVariant::kFewRows, 4);
  expect("fp32 LN 1025x64", bwd_call(4, 4, 1025, 64, ln, true, true), kH100, BwdVariant::kStaged, 0);
  expect("bf16 LN 256x16384", bwd_call(2, 2, 256, 16384, ln, true, true), kH100, BwdVariant::kStaged, 4);
  expect("bf16 LN 2048x64", bwd_call(2, 2, 2048, 64, ln, true, true), kH100, BwdVariant::kStaged, 4, 1);
  expect("bf16 LN 1x4095", bwd_call(2, 2, 1, 4095, ln, true, true), kH100, BwdVariant::kStagedSpan, 0);
  // Staged, one CTA a row slice.
  expect("bf16 LN 4096x4096", bwd_call(2, 2, 4096, 4096, ln, true, true), kH100, BwdVariant::kStaged, 4, 1);
  expect("fp32 LN 4096x4096", bwd_call(4, 4, 4096, 4096, ln, true, true), kH100, BwdVariant::kStaged, 8, 1);
  expect("fp64 LN 4096x4096", bwd_call(8, 8, 4096, 4096, ln, true, true), kH100, BwdVariant::kStaged, 8, 1);
  expect("bf16 + fp32 params", bwd_call(2, 4, 4096, 4096, ln, true, true), kH100, BwdVariant::kStaged, 4, 1);
  expect("bf16 RMS 4096x4096", bwd_call(2, 2, 4096, 4096, rms, true, false), kH100, BwdVariant::kStaged, 4, 1);
  expect("bf16 LN no weight", bwd_call(2, 2, 4096, 4096, ln, false, false), kH100, BwdVariant::kStaged, 4, 1);
  // Staged on a cluster: rows wider than one CTA holds, or a cluster widened to cut partial rows.
  expect("bf16 LN 4096x32768", bwd_call(2, 2, 4096, 32768, ln, true, true), kH100, BwdVariant::kStaged, 4, 2);
  expect("bf16 LN 1024x16384 widened", bwd_call(2, 2, 1024, 16384, ln, true, true), kH100, BwdVariant::kStaged, 4, 2);
  expect("bf16 LN 4096x16384 not widened", bwd_call(2, 2, 4096, 16384, ln, true, true), kH100, BwdVariant::kStaged, 4,
         1);
  expect("fp32 LN 1024x65536", bwd_call(4, 4, 1024, 65536, ln, true, true), kH100, BwdVariant::kStaged, 8, 8);
  expect("fp32 LN 1024x65535", bwd_call(4, 4, 1024, 65535, ln, true, true), kH100, BwdVariant::kStagedSpan, 8, 8);
  // Widths that are not a multiple of the pack: spans; N = 1 and odd N.
  expect("bf16 LN 4096x4095", bwd_call(2, 2, 4096, 4095, ln, true, true), kH100, BwdVariant::kStagedSpan, 0, 1);
  expect("fp32 LN 4096x4097", bwd_call(4, 4, 4096, 4097, ln, true, true), kH100, BwdVariant::kStagedSpan, 0, 1);
  expect("bf16 LN 4096x1", bwd_call(2, 2, 4096, 1, ln, true, true), kH100, BwdVariant::kStagedSpan, 0, 1);
  expect("fp64 RMS 4096x3", bwd_call(8, 8, 4096, 3, rms, true, false), kH100, BwdVariant::kStagedSpan, 0, 1);
  // No cluster before sm_90: rows past one CTA's shared memory take the register kernel, then the
  // two-pass kernels.
  expect("fp32 LN 4096x8192 sm_80", bwd_call(4, 4, 4096, 8192, ln, true, true), kA100, BwdVariant::kRows, 4);
  expect("fp64 LN 4096x4096 sm_80", bwd_call(8, 8, 4096, 4096, ln, true, true), kA100, BwdVariant::kRows, 4);
  expect("bf16 LN 4096x32768 sm_80", bwd_call(2, 2, 4096, 32768, ln, true, true), kA100, BwdVariant::kWide, 0);
  expect("fp32 LN 4096x8191 sm_80", bwd_call(4, 4, 4096, 8191, ln, true, true), kA100, BwdVariant::kWideElems, 0);
  // Rows past the largest cluster: two passes.
  expect("fp32 LN 64x2^20", bwd_call(4, 4, 64, 1 << 20, ln, true, true), kH100, BwdVariant::kWide, 0);
  expect("bf16 LN 64x2^20+1", bwd_call(2, 2, 64, (1 << 20) + 1, ln, true, true), kH100, BwdVariant::kWideElems, 0);
  // Pointers that are not 16-byte aligned: single elements.
  BwdCall unaligned = bwd_call(2, 2, 4096, 4096, ln, true, true);
  unaligned.x += 2;
  expect("x not 16-byte aligned", unaligned, kH100, BwdVariant::kRowsElems, 8);
  BwdCall dy_off = bwd_call(4, 4, 1, 1024, ln, true, true);
  dy_off.dy += 4;
  expect("dy not 16-byte aligned", dy_off, kH100, BwdVariant::kRowsElems, 8);
  BwdCall dx_off = bwd_call(4, 4, 4096, 100000, ln, true, true);
  dx_off.dx += 4;
  expect("dx not 16-byte aligned, wide", dx_off, kH100, BwdVariant::kWideElems, 0);
  BwdCall weight_off = bwd_call(2, 4, 4096, 4096, ln, true, true);
  weight_off.weight += 16;  // float parameters of a 16-bit x: packs of 32 bytes
  expect("weight not pack aligned", weight_off, kH100, BwdVariant::kRowsElems, 8);
}

// A compiled backward kernel: variant, norm (the staged kernel is built per norm, the others take
// it at run time: LayerNorm), packs per thread, x and parameter bytes.
using BwdKey = std::tuple<int, int, int, int, int>;

BwdKey bwd_key(BwdVariant v, Norm norm, int packs, int x_bytes, int param_bytes) {
  const Norm built = reference_ops::bwd_traits(v).staged ? norm : Norm::kLayerNorm;
  return {static_cast<int>(v), static_cast<int>(built), packs, x_bytes, param_bytes};
}

// Every plan is valid, names a built kernel, and has a launch shape that kernel can take.
void check_bwd_plan(const BwdCall& c, const DeviceLimits& d, std::set<BwdKey>& planned) {
  using namespace reference_ops;
  const BwdPlan p = plan_bwd(c, d);
  const BwdTraits t = bwd_traits(p.variant);
  planned.insert(bwd_key(p.variant, p.norm, p.packs_per_thread, c.x_bytes, c.param_bytes));
  const int vec = kPackBytes / c.x_bytes;
  const bool aligned = c.x % kPackBytes == 0 && c.dy % kPackBytes == 0 && c.dx % kPackBytes == 0 &&
                       c.weight % (static_cast<uintptr_t>(c.param_bytes) * vec) == 0;
  const bool span = c.cols % vec != 0;
  auto bad = [&](const char* what) { fail(std::string(what) + ": " + describe(c, p)); };
  if (!p.valid || !bwd_kernel_exists(p.variant, p.packs_per_thread, c.x_bytes)) {
    return bad("no kernel built");
  }
  if ((t.packs16 && !aligned) || (t.packs16 && span != t.span) || p.vec != bwd_vec(p.variant, c.x_bytes)) {
    return bad("packs of an unaligned call, or of the wrong layout");
  }
  const int64_t packs = c.cols / p.vec;
  const bool params = c.dweight || c.dbias;
  int64_t parts = 0;  // partial rows the variant writes
  switch (p.variant) {
    case BwdVariant::kFewRows:
      if (!is_pow2(p.threads_per_row) || p.threads > kFewThreads || p.threads < p.threads_per_row ||
          p.groups * p.threads_per_row > p.threads || int64_t{p.threads_per_row} * p.packs_per_thread < packs ||
          p.row_blocks * p.groups < c.rows || p.grid != p.row_blocks + (params ? ceil_div(packs, kFewColPacks) : 0)) {
        return bad("few-row launch shape");
      }
      break;
    case BwdVariant::kStaged:
    case BwdVariant::kStagedSpan: {
      const int64_t row_packs = packs + (t.span ? kSpanExtraPacks : 0);
      const int slots = p.packs_per_thread + (t.span ? 1 : 0);
      const int64_t shifts = span_shifts(c.x_bytes);
      if (!is_pow2(p.threads_per_row) || p.threads != p.threads_per_row * p.groups || p.threads > kBwdThreads ||
          p.cluster > d.max_cluster || !is_pow2(p.cluster) || (p.cluster > 1 && p.groups != 1) ||
          (p.cluster > 1 && p.threads_per_row < kWarpSize) || int64_t{p.threads_per_row} * slots < p.slice_packs ||
          p.slice_packs * p.cluster < row_packs || p.stages < 1 || p.stages > kBwdMaxStages ||
          p.smem_bytes > d.smem_per_block_optin - 4096 || p.clusters < 1 || p.grid != p.clusters * p.cluster ||
          (t.span && p.clusters * p.groups < c.rows && p.clusters * p.groups % shifts != 0)) {
        return bad("staged launch shape");
      }
      parts = p.clusters > 1 ? p.clusters : 0;
      break;
    }
    case BwdVariant::kRows:
    case BwdVariant::kRowsElems:
      if (!is_pow2(p.threads_per_row) || p.threads_per_row > kBwdThreads ||
          p.groups * p.threads_per_row != kBwdThreads || int64_t{p.threads_per_row} * p.packs_per_thread < packs ||
          p.grid < 1) {
        return bad("register launch shape");
      }
      parts = p.grid;
      break;
    case BwdVariant::kWide:
    case BwdVariant::kWideElems:
      if (p.strips * kColumnsThreads < packs || p.chunks * p.rows_per_chunk < c.rows ||
          (p.chunks - 1) * p.rows_per_chunk >= c.rows || p.chunks > 65535 || p.stats_grid < 1 ||
          p.stats_grid > c.rows) {
        return bad("two-pass launch shape");
      }
      parts = p.chunks;
      break;
  }
  const int sum_vec = kPackBytes / bwd_acc_bytes(c.x_bytes);
  if (p.sum_parts != (params ? parts : 0) ||
      (p.sum_parts > 0 && ((p.sum_vec != 1 && (p.sum_vec != sum_vec || c.cols % sum_vec != 0)) ||
                           p.sum_tiles * kSumCols * p.sum_vec < c.cols))) {
    return bad("column sums");
  }
}

void bwd_sweep() {
  std::set<BwdKey> planned;
  const int64_t row_counts[] = {1, 7, 132, 133, 1024, 1025, 100000};
  int64_t plans = 0;
  for (const auto& types : kTypes) {
    for (const Norm norm : {Norm::kLayerNorm, Norm::kRms}) {
      for (int params = 0; params < 4; ++params) {
        const bool weight = (params & 1) != 0;
        const bool dbias = (params & 2) != 0;
        if (norm == Norm::kRms && dbias) {
          continue;
        }
        for (const DeviceLimits& d : kDevices) {
          for (const int64_t rows : row_counts) {
            for (int64_t cols = 1; cols <= (int64_t{1} << 22); cols += cols < (1 << 15) ? 1 : 61) {
              BwdCall c = bwd_call(types[0], types[1], rows, cols, norm, weight, dbias);
              check_bwd_plan(c, d, planned);
              ++plans;
              // Narrower rows also with dy not 16-byte aligned.
              if (cols <= 4096) {
                c.dy += 2;
                check_bwd_plan(c, d, planned);
                ++plans;
              }
            }
          }
        }
      }
    }
  }
  // Every kernel built is planned for some shape.
  std::set<BwdKey> built;
  for (const auto& types : kTypes) {
    for (int v = 0; v < reference_ops::kBwdVariantCount; ++v) {
      for (const Norm norm : {Norm::kLayerNorm, Norm::kRms}) {
        for (const int packs : {0, 1, 2, 4, 8}) {
          const BwdVariant variant = static_cast<BwdVariant>(v);
          if (!reference_ops::bwd_kernel_exists(variant, packs, types[0]) ||
              !built.insert(bwd_key(variant, norm, packs, types[0], types[1])).second) {
            continue;
          }
          if (planned.count(bwd_key(variant, norm, packs, types[0], types[1])) == 0) {
            fail(std::string("built but never planned: ") + reference_ops::bwd_variant_name(variant) + " " +
                 (norm == Norm::kRms ? "rms" : "ln") + " packs " + std::to_string(packs) + " x " +
                 std::to_string(types[0]) + "B params " + std::to_string(types[1]) + "B");
          }
        }
      }
    }
  }
  std::printf("backward: %lld plans checked; %zu kernels per arch (bfloat16 and float16 count once), %zu planned\n",
              static_cast<long long>(plans), built.size(), planned.size());
}

// -----------------------------------------------------------------------------
// Fused residual ops
// -----------------------------------------------------------------------------

using reference_ops::AddBwdCall;
using reference_ops::AddBwdKernel;
using reference_ops::AddBwdPlan;
using reference_ops::AddBwdVariant;
using reference_ops::AddFwdCall;
using reference_ops::AddFwdPlan;
using reference_ops::AddFwdVariant;

constexpr uintptr_t kResidual = 7 << 20;
constexpr uintptr_t kH = 8 << 20;
constexpr uintptr_t kDh = 9 << 20;
constexpr uintptr_t kDsum = 10 << 20;

// dtype sizes of (x, residual stream, parameters, y), as add_norm.cu dispatches them: one dtype;
// float32 parameters beside a 16-bit stream; a 16-bit x beside a float32 stream, y in x's dtype or
// the stream's.
constexpr int kAddTypes[][4] = {{4, 4, 4, 4}, {8, 8, 8, 8}, {2, 2, 2, 2}, {2, 2, 4, 2}, {2, 4, 4, 2}, {2, 4, 4, 4}};

AddFwdCall add_fwd_call(const int (&types)[4], int64_t rows, int64_t cols, Norm norm, bool weight, bool bias) {
  return {
      rows, cols, types[0], types[1], types[2], types[3], norm, kX, kResidual, weight ? kWeight : 0, bias ? kBias : 0,
      kH,   kY};
}

AddBwdCall add_bwd_call(const int (&types)[4], int64_t rows, int64_t cols, Norm norm, bool weight, bool dbias,
                        bool dh) {
  // dx is written only where x's dtype differs from the stream's.
  return {rows,
          cols,
          types[0],
          types[1],
          types[2],
          types[3],
          norm,
          weight,
          dbias,
          kDy,
          dh ? kDh : 0,
          kH,
          weight ? kWeight : 0,
          kDsum,
          types[0] != types[1] ? kDx : 0};
}

std::string describe(const AddFwdCall& c, const AddFwdPlan& p) {
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "add fwd x %dB r %dB params %dB y %dB %s %lldx%lld w=%d b=%d -> %s packs=%d tpr=%d threads=%d "
                "grid=%lld",
                c.x_bytes, c.r_bytes, c.param_bytes, c.y_bytes, c.norm == Norm::kRms ? "rms" : "ln",
                static_cast<long long>(c.rows), static_cast<long long>(c.cols), c.weight != 0, c.bias != 0,
                reference_ops::add_fwd_variant_name(p.variant), p.packs_per_thread, p.threads_per_row, p.threads,
                static_cast<long long>(p.grid));
  return buf;
}

std::string describe(const AddBwdCall& c, const AddBwdPlan& p) {
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "add bwd x %dB r %dB params %dB y %dB %s %lldx%lld dw=%d db=%d dh=%d -> %s packs=%d tpr=%d "
                "threads=%d grid=%lld parts=%lld sum_vec=%d",
                c.x_bytes, c.r_bytes, c.param_bytes, c.y_bytes, c.norm == Norm::kRms ? "rms" : "ln",
                static_cast<long long>(c.rows), static_cast<long long>(c.cols), c.dweight, c.dbias, c.dh != 0,
                reference_ops::add_bwd_variant_name(p.variant), p.packs_per_thread, p.threads_per_row, p.threads,
                static_cast<long long>(p.grid), static_cast<long long>(p.sum_parts), p.sum_vec);
  return buf;
}

AddBwdPlan plan_add_bwd(const AddBwdCall& c, const DeviceLimits& d) {
  return reference_ops::plan_add_bwd(c, d, StubAddOccupancy(d, c.r_bytes));
}

// The launch rules add_norm.cu applied inline before its planning moved into plan_add_fwd /
// plan_add_bwd, transcribed from it as they were: the sweeps below compare every plan with them,
// so a change of any launch shape shows here (and must then be made here too, deliberately).
namespace legacy {

struct Shape {
  int threads = 0;
  int packs = 0;
};

Shape add_norm_shape(int64_t cols, int vec, int max_elems, int max_threads, int target_packs) {
  if (cols % vec != 0) {
    return {};
  }
  const reference_ops::RowConfig rc = reference_ops::choose_row_config(cols / vec, target_packs, max_threads);
  if (rc.packs_per_thread * vec > max_elems ||
      static_cast<int64_t>(rc.packs_per_thread) * rc.threads_per_row * vec < cols) {
    return {};
  }
  return {rc.threads_per_row, rc.packs_per_thread};
}

bool aligned(uintptr_t p, int elem_bytes, int vec) { return p % (static_cast<uintptr_t>(elem_bytes) * vec) == 0; }

// The forward's launch: fused, the kernel's kEarly, threads a row, packs a thread, CTA and grid.
struct Fwd {
  bool fused = false;
  bool early = false;
  int threads = 0;
  int packs = 0;
  int cta = 0;
  int64_t grid = 0;
};

Fwd fwd(const AddFwdCall& c, int64_t sms) {
  const int kVec = 16 / c.r_bytes;
  const int max_elems = 64 / (c.r_bytes == 8 ? 8 : 4);
  Shape rs = add_norm_shape(c.cols, kVec, max_elems, 512, 2);
  if (rs.packs == 0) {
    rs = add_norm_shape(c.cols, kVec, max_elems, 1024, 2);
  }
  if (rs.packs == 0 || !aligned(c.x, c.x_bytes, kVec) || !aligned(c.residual, c.r_bytes, kVec) ||
      !aligned(c.weight, c.param_bytes, kVec) || !aligned(c.bias, c.param_bytes, kVec) ||
      !aligned(c.h, c.r_bytes, kVec) || !aligned(c.y, c.y_bytes, kVec)) {
    return {};
  }
  Fwd f;
  f.fused = true;
  if (c.rows == 0) {
    return f;
  }
  f.threads = rs.threads;
  f.packs = rs.packs;
  f.cta = std::max(rs.threads, 256);
  const Shape one = add_norm_shape(c.cols, kVec, max_elems, 512, 1);
  const int64_t rows_per_cta = reference_ops::next_pow2(reference_ops::ceil_div(c.rows, sms));
  const bool early = one.packs > 0 && one.packs <= 2 && rows_per_cta * one.threads <= 512;
  if (early) {
    f.threads = one.threads;
    f.packs = one.packs;
    f.cta = static_cast<int>(std::max<int64_t>(rows_per_cta * one.threads, 32));
  }
  f.early = early && f.packs <= 2;
  f.grid = reference_ops::ceil_div(c.rows, f.cta / f.threads);
  return f;
}

struct Bwd {
  bool fused = false;
  int threads = 0;
  int packs = 0;
  int cta = 0;
  int64_t grid = 0;
  bool sums = false;
  int sum_vec = 0;
};

Bwd bwd(const AddBwdCall& c, const DeviceLimits& d) {
  const int kVec = 16 / c.r_bytes;
  const int max_elems = 64 / (c.r_bytes == 8 ? 8 : 4);
  const Shape rs = add_norm_shape(c.cols, kVec, max_elems, 512, c.r_bytes == 2 ? 1 : 2);
  if (rs.packs == 0 || !aligned(c.dy, c.y_bytes, kVec) || !aligned(c.dh, c.r_bytes, kVec) ||
      !aligned(c.h, c.r_bytes, kVec) || !aligned(c.weight, c.param_bytes, kVec) || !aligned(c.dsum, c.r_bytes, kVec) ||
      !aligned(c.dx, c.x_bytes, kVec)) {
    return {};
  }
  Bwd b;
  b.fused = true;
  if (c.rows == 0) {
    return b;
  }
  b.threads = rs.threads;
  b.packs = rs.packs;
  b.cta = std::max(rs.threads, 256);
  const int groups_per_cta = b.cta / rs.threads;
  const int64_t resident =
      StubAddOccupancy(d, c.r_bytes).resident_ctas({AddBwdVariant::kRows, c.norm, rs.packs}, b.cta);
  b.grid = std::max<int64_t>(1, std::min(reference_ops::ceil_div(c.rows, groups_per_cta), resident));
  b.sums = c.dweight || c.dbias;
  if (b.sums) {
    b.sum_vec = reference_ops::column_sum_vec(c.cols, c.r_bytes == 8 ? 8 : 4, c.dweight && c.dbias, d.sm_count);
  }
  return b;
}

}  // namespace legacy

int64_t add_compared = 0;

void compare_fwd(const AddFwdCall& c, const DeviceLimits& d, const AddFwdPlan& p) {
  ++add_compared;
  const legacy::Fwd l = legacy::fwd(c, d.sm_count);
  const bool fused = reference_ops::add_fwd_traits(p.variant).fused;
  bool same = fused == l.fused;
  if (same && fused && c.rows == 0) {
    same = p.grid == 0;
  } else if (same && fused) {
    same = (p.variant == AddFwdVariant::kFewRows) == l.early && p.threads_per_row == l.threads &&
           p.packs_per_thread == l.packs && p.threads == l.cta && p.grid == l.grid;
  }
  if (!same) {
    char buf[160];
    std::snprintf(buf, sizeof buf, " != before: fused=%d early=%d packs=%d tpr=%d cta=%d grid=%lld", l.fused, l.early,
                  l.packs, l.threads, l.cta, static_cast<long long>(l.grid));
    fail(describe(c, p) + buf);
  }
}

void compare_bwd(const AddBwdCall& c, const DeviceLimits& d, const AddBwdPlan& p) {
  ++add_compared;
  const legacy::Bwd l = legacy::bwd(c, d);
  const bool fused = reference_ops::add_bwd_traits(p.variant).fused;
  bool same = fused == l.fused;
  if (same && fused && c.rows == 0) {
    same = p.grid == 0;
  } else if (same && fused) {
    same = p.threads_per_row == l.threads && p.packs_per_thread == l.packs && p.threads == l.cta && p.grid == l.grid &&
           (p.sum_parts > 0) == l.sums && (!l.sums || (p.sum_parts == l.grid && p.sum_vec == l.sum_vec));
  }
  if (!same) {
    char buf[160];
    std::snprintf(buf, sizeof buf, " != before: fused=%d packs=%d tpr=%d cta=%d grid=%lld sums=%d sum_vec=%d", l.fused,
                  l.packs, l.threads, l.cta, static_cast<long long>(l.grid), l.sums, l.sum_vec);
    fail(describe(c, p) + buf);
  }
}

void add_table_order() {
  for (int v = 0; v < reference_ops::kAddFwdVariantCount; ++v) {
    if (static_cast<int>(reference_ops::kAddFwdVariants[v].variant) != v) {
      fail("kAddFwdVariants is not in AddFwdVariant order at " + std::to_string(v));
    }
  }
  for (int v = 0; v < reference_ops::kAddBwdVariantCount; ++v) {
    if (static_cast<int>(reference_ops::kAddBwdVariants[v].variant) != v) {
      fail("kAddBwdVariants is not in AddBwdVariant order at " + std::to_string(v));
    }
  }
}

// Named shapes and their launch shapes on H100 limits (132 SMs): packs a thread, threads a row,
// CTA threads, grid.
void expect_add(const char* name, const AddFwdCall& c, AddFwdVariant v, int packs, int tpr, int threads, int64_t grid) {
  const AddFwdPlan p = reference_ops::plan_add_fwd(c, kH100);
  if (p.variant != v || (v != AddFwdVariant::kSeparate && (p.packs_per_thread != packs || p.threads_per_row != tpr ||
                                                           p.threads != threads || p.grid != grid))) {
    fail(std::string(name) + ": " + describe(c, p));
  }
}

void expect_add(const char* name, const AddBwdCall& c, AddBwdVariant v, int packs, int tpr, int threads, int64_t grid) {
  const AddBwdPlan p = plan_add_bwd(c, kH100);
  if (p.variant != v || (v != AddBwdVariant::kSeparate && (p.packs_per_thread != packs || p.threads_per_row != tpr ||
                                                           p.threads != threads || p.grid != grid))) {
    fail(std::string(name) + ": " + describe(c, p));
  }
}

void add_named_shapes() {
  const Norm ln = Norm::kLayerNorm;
  const Norm rms = Norm::kRms;
  const int(&bf16)[4] = kAddTypes[2];
  const int(&fp32)[4] = kAddTypes[0];
  const int(&fp64)[4] = kAddTypes[1];
  const int(&stream)[4] = kAddTypes[4];  // bf16 x, float32 stream, bf16 y
  // Forward: many rows on up to 512 threads at 2 packs, rows of 256 threads or fewer sharing a
  // 256-thread CTA.
  expect_add("bf16 LN 65536x1024", add_fwd_call(bf16, 65536, 1024, ln, true, true), AddFwdVariant::kRows, 2, 64, 256,
             16384);
  expect_add("bf16 RMS 16384x4096", add_fwd_call(bf16, 16384, 4096, rms, true, false), AddFwdVariant::kRows, 2, 256,
             256, 16384);
  expect_add("bf16 LN 8192x8192", add_fwd_call(bf16, 8192, 8192, ln, true, true), AddFwdVariant::kRows, 2, 512, 512,
             8192);
  expect_add("bf16 LN 4096x16384", add_fwd_call(bf16, 4096, 16384, ln, true, true), AddFwdVariant::kRows, 2, 1024, 1024,
             4096);
  // float32 rows past 512 threads at 2 packs take 4 on 512 threads.
  expect_add("fp32 LN 8192x8192", add_fwd_call(fp32, 8192, 8192, ln, true, true), AddFwdVariant::kRows, 4, 512, 512,
             8192);
  expect_add("stream LN 8192x8192", add_fwd_call(stream, 8192, 8192, ln, true, true), AddFwdVariant::kRows, 4, 512, 512,
             8192);
  expect_add("fp64 RMS 4096x4096", add_fwd_call(fp64, 4096, 4096, rms, true, false), AddFwdVariant::kRows, 4, 512, 512,
             4096);
  expect_add("bf16 LN 1000000x8", add_fwd_call(bf16, 1000000, 8, ln, true, true), AddFwdVariant::kRows, 1, 1, 256,
             3907);
  // One wave or less: one pack a thread, rows spread over the SMs.
  expect_add("bf16 RMS 1x512", add_fwd_call(bf16, 1, 512, rms, true, false), AddFwdVariant::kFewRows, 1, 64, 64, 1);
  expect_add("bf16 LN 8x4096", add_fwd_call(bf16, 8, 4096, ln, true, true), AddFwdVariant::kFewRows, 1, 512, 512, 8);
  expect_add("bf16 LN 264x512", add_fwd_call(bf16, 264, 512, ln, true, true), AddFwdVariant::kFewRows, 1, 64, 128, 132);
  expect_add("bf16 RMS 1x8192", add_fwd_call(bf16, 1, 8192, rms, true, false), AddFwdVariant::kFewRows, 2, 512, 512, 1);
  expect_add("fp32 LN 132x16", add_fwd_call(fp32, 132, 16, ln, true, true), AddFwdVariant::kFewRows, 1, 4, 32, 17);
  // Past one wave at 512 threads a CTA.
  expect_add("bf16 LN 133x4096", add_fwd_call(bf16, 133, 4096, ln, true, true), AddFwdVariant::kRows, 2, 256, 256, 133);
  // The separate kernels: widths not a multiple of the pack, rows past the registers, unaligned.
  expect_add("bf16 LN 4096x4095", add_fwd_call(bf16, 4096, 4095, ln, true, true), AddFwdVariant::kSeparate, 0, 0, 0, 0);
  expect_add("bf16 LN 64x16392", add_fwd_call(bf16, 64, 16392, ln, true, true), AddFwdVariant::kSeparate, 0, 0, 0, 0);
  expect_add("fp32 LN 64x16384", add_fwd_call(fp32, 64, 16384, ln, true, true), AddFwdVariant::kRows, 4, 1024, 1024,
             64);
  expect_add("fp32 LN 64x16388", add_fwd_call(fp32, 64, 16388, ln, true, true), AddFwdVariant::kSeparate, 0, 0, 0, 0);
  expect_add("fp64 LN 64x8194", add_fwd_call(fp64, 64, 8194, ln, true, true), AddFwdVariant::kSeparate, 0, 0, 0, 0);
  AddFwdCall x_off = add_fwd_call(stream, 64, 4096, ln, true, true);
  x_off.x += 4;  // a bf16 x beside a float32 stream: packs of 8 bytes
  expect_add("x not 8-byte aligned", x_off, AddFwdVariant::kSeparate, 0, 0, 0, 0);
  x_off.x += 4;
  expect_add("x 8-byte aligned", x_off, AddFwdVariant::kFewRows, 2, 512, 512, 64);
  AddFwdCall w_off = add_fwd_call(kAddTypes[3], 64, 4096, ln, true, true);
  w_off.weight += 16;  // float32 parameters beside a 16-bit stream: packs of 32 bytes
  expect_add("weight not 32-byte aligned", w_off, AddFwdVariant::kSeparate, 0, 0, 0, 0);
  // Backward: 16-bit streams at one pack a thread, float32 at two (four past 1024 packs).
  expect_add("bf16 LN bwd 65536x1024", add_bwd_call(bf16, 65536, 1024, ln, true, true, true), AddBwdVariant::kRows, 1,
             128, 256, 528);
  expect_add("bf16 LN bwd 16384x8192", add_bwd_call(bf16, 16384, 8192, ln, true, true, true), AddBwdVariant::kRows, 2,
             512, 512, 132);
  expect_add("fp32 RMS bwd 16384x4096", add_bwd_call(fp32, 16384, 4096, rms, true, false, true), AddBwdVariant::kRows,
             2, 512, 512, 132);
  expect_add("fp32 LN bwd 8192x8192", add_bwd_call(fp32, 8192, 8192, ln, true, true, false), AddBwdVariant::kRows, 4,
             512, 512, 132);
  expect_add("stream LN bwd 4x4096", add_bwd_call(stream, 4, 4096, ln, true, true, true), AddBwdVariant::kRows, 2, 512,
             512, 4);
  expect_add("bf16 RMS bwd 1x64", add_bwd_call(bf16, 1, 64, rms, true, false, true), AddBwdVariant::kRows, 1, 8, 256,
             1);
  expect_add("bf16 LN bwd 64x8200", add_bwd_call(bf16, 64, 8200, ln, true, true, true), AddBwdVariant::kSeparate, 0, 0,
             0, 0);
  expect_add("fp32 LN bwd 64x4097", add_bwd_call(fp32, 64, 4097, ln, true, true, true), AddBwdVariant::kSeparate, 0, 0,
             0, 0);
  AddBwdCall dx_off = add_bwd_call(stream, 64, 4096, ln, true, true, true);
  dx_off.dx += 2;
  expect_add("dx not 8-byte aligned", dx_off, AddBwdVariant::kSeparate, 0, 0, 0, 0);
}

// The widest row the fused kernels take in each direction: add_max_packs packs a thread on the
// direction's largest CTA.
int64_t add_max_cols(int r_bytes, int max_threads) {
  return static_cast<int64_t>(max_threads) * reference_ops::add_max_packs(r_bytes) * reference_ops::add_vec(r_bytes);
}

// Every fused plan names a built kernel with a launch shape that covers the call; kSeparate exactly
// for the widths the fused kernels do not take and for unaligned pointers.
void check_add_fwd(const AddFwdCall& c, const DeviceLimits& d, bool aligned,
                   std::set<std::tuple<int, int, int, int>>& planned) {
  using namespace reference_ops;
  const AddFwdPlan p = plan_add_fwd(c, d);
  compare_fwd(c, d, p);
  const AddFwdTraits t = add_fwd_traits(p.variant);
  const int vec = add_vec(c.r_bytes);
  const bool takes = aligned && c.cols % vec == 0 && c.cols <= add_max_cols(c.r_bytes, kAddFwdMaxThreads);
  if (t.fused != takes || p.norm != c.norm) {
    return fail("fused or not: " + describe(c, p));
  }
  if (!t.fused) {
    return;
  }
  planned.insert({static_cast<int>(p.variant), static_cast<int>(p.norm), p.packs_per_thread, c.r_bytes});
  if (!add_fwd_kernel_exists(p.variant, p.packs_per_thread, c.r_bytes)) {
    return fail("no kernel built for " + describe(c, p));
  }
  const int64_t groups = p.threads_per_row > 0 ? p.threads / p.threads_per_row : 0;
  if (p.vec != vec || !is_pow2(p.threads_per_row) || !is_pow2(p.threads) || p.threads < kWarpSize ||
      p.threads > t.max_threads || p.threads % p.threads_per_row != 0 ||
      static_cast<int64_t>(p.threads_per_row) * p.packs_per_thread * vec < c.cols ||
      static_cast<int64_t>(p.threads_per_row) * (p.packs_per_thread / 2) * vec >= c.cols || p.grid * groups < c.rows ||
      (p.grid > 0 && (p.grid - 1) * groups >= c.rows) ||
      (p.variant == AddFwdVariant::kFewRows && p.grid > d.sm_count)) {
    fail("launch shape of " + describe(c, p));
  }
}

void check_add_bwd(const AddBwdCall& c, const DeviceLimits& d, bool aligned,
                   std::set<std::tuple<int, int, int, int>>& planned) {
  using namespace reference_ops;
  const AddBwdPlan p = plan_add_bwd(c, d);
  compare_bwd(c, d, p);
  const AddBwdTraits t = add_bwd_traits(p.variant);
  const int vec = add_vec(c.r_bytes);
  const bool takes = aligned && c.cols % vec == 0 && c.cols <= add_max_cols(c.r_bytes, kAddBwdMaxThreads);
  if (t.fused != takes || p.norm != c.norm) {
    return fail("fused or not: " + describe(c, p));
  }
  if (!t.fused) {
    return;
  }
  planned.insert({static_cast<int>(p.variant), static_cast<int>(p.norm), p.packs_per_thread, c.r_bytes});
  if (!add_bwd_kernel_exists(p.variant, p.packs_per_thread, c.r_bytes)) {
    return fail("no kernel built for " + describe(c, p));
  }
  const int64_t groups = p.threads_per_row > 0 ? p.threads / p.threads_per_row : 0;
  const int64_t resident =
      StubAddOccupancy(d, c.r_bytes).resident_ctas({p.variant, p.norm, p.packs_per_thread}, p.threads);
  const bool sums = c.dweight || c.dbias;
  const int sum_vec = kPackBytes / bwd_acc_bytes(c.r_bytes);
  // Rows of more packs a thread than the target are one row group a CTA (the kernel's staging of
  // column sums holds only that).
  const bool one_group = p.packs_per_thread > add_bwd_target_packs(c.r_bytes);
  if (p.vec != vec || !is_pow2(p.threads_per_row) || !is_pow2(p.threads) || p.threads < kAddCtaThreads ||
      p.threads > t.max_threads || p.threads % p.threads_per_row != 0 || (one_group && groups != 1) ||
      static_cast<int64_t>(p.threads_per_row) * p.packs_per_thread * vec < c.cols ||
      static_cast<int64_t>(p.threads_per_row) * (p.packs_per_thread / 2) * vec >= c.cols ||
      (c.rows == 0) != (p.grid == 0) ||
      (c.rows > 0 && (p.grid < 1 || p.grid > resident || (p.grid < resident && p.grid * groups < c.rows) ||
                      (p.grid - 1) * groups >= c.rows)) ||
      p.sum_parts != (sums ? p.grid : 0) || (p.sum_parts > 0 && p.sum_vec != 1 && p.sum_vec != sum_vec)) {
    fail("launch shape of " + describe(c, p));
  }
}

void add_sweep() {
  std::set<std::tuple<int, int, int, int>> fwd_planned;
  std::set<std::tuple<int, int, int, int>> bwd_planned;
  int64_t fwd_plans = 0;
  int64_t bwd_plans = 0;
  for (const auto& types : kAddTypes) {
    for (const Norm norm : {Norm::kLayerNorm, Norm::kRms}) {
      for (int params = 0; params < 4; ++params) {
        const bool weight = (params & 1) != 0;
        const bool bias = (params & 2) != 0;
        if (norm == Norm::kRms && bias) {
          continue;
        }
        for (const DeviceLimits& d : kDevices) {
          // Row counts about the forward's one-wave limits (rows a CTA a power of two times the
          // SMs) and the backward's resident grid.
          const int64_t sms = d.sm_count;
          const int64_t row_counts[] = {0,
                                        1,
                                        2,
                                        7,
                                        8,
                                        9,
                                        sms - 1,
                                        sms,
                                        sms + 1,
                                        2 * sms,
                                        2 * sms + 1,
                                        64 * sms,
                                        64 * sms + 1,
                                        512 * sms,
                                        512 * sms + 1,
                                        100000,
                                        1 << 20};
          for (const int64_t rows : row_counts) {
            // Every width up to past the widest fused row (16384), then a sample.
            for (int64_t cols = 1; cols <= (int64_t{1} << 18); cols += cols < 16500 ? 1 : 61) {
              AddFwdCall f = add_fwd_call(types, rows, cols, norm, weight, bias);
              check_add_fwd(f, d, true, fwd_planned);
              ++fwd_plans;
              check_add_bwd(add_bwd_call(types, rows, cols, norm, weight, bias, true), d, true, bwd_planned);
              ++bwd_plans;
              // Narrower rows also without dh, and with each pointer moved by one element (aligned
              // to its pack only where the pack is one element).
              if (cols > 1024 || rows > 1024) {
                continue;
              }
              check_add_bwd(add_bwd_call(types, rows, cols, norm, weight, bias, false), d, true, bwd_planned);
              ++bwd_plans;
              for (int moved = 0; moved < 6; ++moved) {
                AddFwdCall m = f;
                uintptr_t* const field[] = {&m.x, &m.residual, &m.weight, &m.bias, &m.h, &m.y};
                const int bytes[] = {m.x_bytes, m.r_bytes, m.param_bytes, m.param_bytes, m.r_bytes, m.y_bytes};
                if (*field[moved] == 0) {
                  continue;
                }
                *field[moved] += static_cast<uintptr_t>(bytes[moved]);
                check_add_fwd(m, d, false, fwd_planned);
                ++fwd_plans;
                AddBwdCall b = add_bwd_call(types, rows, cols, norm, weight, bias, true);
                uintptr_t* const bfield[] = {&b.dy, &b.dh, &b.h, &b.weight, &b.dsum, &b.dx};
                const int bbytes[] = {b.y_bytes, b.r_bytes, b.r_bytes, b.param_bytes, b.r_bytes, b.x_bytes};
                if (*bfield[moved] != 0) {
                  *bfield[moved] += static_cast<uintptr_t>(bbytes[moved]);
                  check_add_bwd(b, d, false, bwd_planned);
                  ++bwd_plans;
                }
              }
            }
          }
        }
      }
    }
  }
  // Every kernel built is planned for some shape.
  int fwd_built = 0;
  int bwd_built = 0;
  for (const int r_bytes : {2, 4, 8}) {
    for (const Norm norm : {Norm::kLayerNorm, Norm::kRms}) {
      for (const int packs : {1, 2, 4, 8}) {
        for (int v = 0; v < reference_ops::kAddFwdVariantCount; ++v) {
          const AddFwdVariant variant = static_cast<AddFwdVariant>(v);
          if (!reference_ops::add_fwd_kernel_exists(variant, packs, r_bytes)) {
            continue;
          }
          ++fwd_built;
          if (fwd_planned.count({v, static_cast<int>(norm), packs, r_bytes}) == 0) {
            fail(std::string("built but never planned: ") + reference_ops::add_fwd_variant_name(variant) + " " +
                 (norm == Norm::kRms ? "rms" : "ln") + " packs " + std::to_string(packs) + " stream " +
                 std::to_string(r_bytes) + "B");
          }
        }
        for (int v = 0; v < reference_ops::kAddBwdVariantCount; ++v) {
          const AddBwdVariant variant = static_cast<AddBwdVariant>(v);
          if (!reference_ops::add_bwd_kernel_exists(variant, packs, r_bytes)) {
            continue;
          }
          ++bwd_built;
          if (bwd_planned.count({v, static_cast<int>(norm), packs, r_bytes}) == 0) {
            fail(std::string("built but never planned: backward ") + reference_ops::add_bwd_variant_name(variant) +
                 " " + (norm == Norm::kRms ? "rms" : "ln") + " packs " + std::to_string(packs) + " stream " +
                 std::to_string(r_bytes) + "B");
          }
        }
      }
    }
  }
  std::printf(
      "fused: %lld forward and %lld backward plans checked, %lld compared with the launch rules before the planner; "
      "kernels by variant, norm, packs and stream dtype size: forward %d built, %zu planned; backward %d built, %zu "
      "planned\n",
      static_cast<long long>(fwd_plans), static_cast<long long>(bwd_plans), static_cast<long long>(add_compared),
      fwd_built, fwd_planned.size(), bwd_built, bwd_planned.size());
}
}  // namespace

int main() {
  table_order();
  named_shapes();
  sweep();
  bwd_table_order();
  bwd_named_shapes();
  bwd_sweep();
  add_table_order();
  add_named_shapes();
  add_sweep();
  std::printf("%s (%d failures)\n", failures == 0 ? "OK" : "FAILED", failures);
  return failures == 0 ? 0 : 1;
}
