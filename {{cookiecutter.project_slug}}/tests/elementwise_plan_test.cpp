// The elementwise planner's answers, checked without a GPU (tests/test_plans.py builds and runs
// this): every problem of a grid maps to a launch the engine builds, that covers the tensor, within
// the hardware's limits; and the shapes the starter was tuned with stay as they were.
#include "engine/elementwise_plan.h"

#include <cstdint>
#include <cstdio>
#include <initializer_list>

namespace plan = {{cookiecutter.__ns}}::elementwise;

int failures = 0;
int checked = 0;

void expect(bool ok, const char* what, const plan::Problem& p, const plan::Plan& l) {
  ++checked;
  if (!ok) {
    ++failures;
    std::printf(
        "FAILED %s: numel %lld, %d-byte elements, %d in, %d out, aligned %d, reread %d -> %d threads, %d packs,"
        " vec %d, evict_last %d, %lld blocks\n",
        what, static_cast<long long>(p.numel), p.elem_bytes, p.inputs, p.outputs, p.aligned, p.reread, l.threads,
        l.packs, l.vec, l.evict_last, static_cast<long long>(l.blocks));
  }
}

int main() {
  const std::int64_t sizes[] = {1, 2, 7, 8, 9, 1023, 1024, 1025, 65535, 65536, 1 << 20, (1LL << 31) + 3, 1LL << 40};
  for (bool fast : {false, true}) {
    for (int bytes : {2, 4, 8}) {
      for (int inputs = 1; inputs <= 3; ++inputs) {
        for (int outputs = 1; outputs <= 2; ++outputs) {
          for (bool aligned : {false, true}) {
            for (bool reread : {false, true}) {
              for (std::int64_t n : sizes) {
                plan::Problem p;
                p.numel = n;
                p.elem_bytes = bytes;
                p.is_float = bytes == 4;
                p.inputs = inputs;
                p.outputs = outputs;
                p.aligned = aligned;
                p.reread = reread;
                const plan::Plan l = plan::plan(p, plan::Gpu{fast});
                // A kernel is built for 1, 2 and 4 packs a thread (elementwise.cuh).
                expect(l.packs == 1 || l.packs == 2 || l.packs == 4, "packs the engine builds", p, l);
                expect(l.threads % plan::kWarpSize == 0 && l.threads > 0 && l.threads <= 1024, "whole warps", p, l);
                expect(l.packs * inputs <= plan::kMaxPacksInFlight, "packs in flight", p, l);
                expect(l.vec == (aligned ? plan::kVecBytes / bytes : 1), "16-byte packs when aligned", p, l);
                expect(!l.evict_last || (aligned && reread), "evict_last only for aligned inputs read again", p, l);
                const std::int64_t per_block = std::int64_t(l.threads) * l.packs * l.vec;
                expect(l.blocks >= 1 && l.blocks <= 2147483647, "a grid within the limit", p, l);
                expect(l.blocks * per_block >= n || l.blocks == 2147483647, "the grid covers the tensor", p, l);
                expect((l.blocks - 1) * per_block < n, "no block without work", p, l);
              }
            }
          }
        }
      }
    }
  }
  // The starter's shapes: one input forward (x read again by the backward), two inputs backward.
  const auto shape_of = [](bool fast, int bytes, int inputs, bool reread) {
    plan::Problem p;
    p.numel = 1 << 24;
    p.elem_bytes = bytes;
    p.is_float = bytes == 4;
    p.inputs = inputs;
    p.reread = reread;
    return plan::plan(p, plan::Gpu{fast});
  };
  struct Known {
    bool fast;
    int bytes, inputs;
    bool reread;
    int threads, packs;
    bool evict_last;
  };
  const Known known[] = {
      {false, 2, 1, true, 512, 1, false},  {false, 4, 2, false, 512, 1, false}, {false, 8, 1, true, 256, 4, false},
      {false, 8, 2, false, 256, 4, false}, {true, 2, 1, true, 128, 2, false},   {true, 2, 2, false, 128, 1, false},
      {true, 4, 1, true, 128, 2, true},    {true, 4, 2, false, 256, 4, false},  {true, 8, 1, true, 128, 2, false},
      {true, 8, 2, false, 128, 1, false},
  };
  for (const Known& k : known) {
    const plan::Plan l = shape_of(k.fast, k.bytes, k.inputs, k.reread);
    plan::Problem p;
    p.elem_bytes = k.bytes;
    p.inputs = k.inputs;
    expect(l.threads == k.threads && l.packs == k.packs && l.evict_last == k.evict_last, "the starter's shape", p, l);
  }
  std::printf("%d checks, %d failed\n", checked, failures);
  return failures == 0 ? 0 : 1;
}
