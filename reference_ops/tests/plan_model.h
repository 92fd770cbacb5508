// Models of the compiled backward kernels' occupancy, for the planners run on the CPU
// (plan_test.cpp, plan_boundaries.cpp): the runtime answers these on a GPU (norm_bwd.cu,
// add_norm.cu); a CPU program knows neither the kernels' register counts nor their shared memory.
#pragma once

#include <algorithm>
#include <cstdint>

#include "norm_plan.h"

namespace reference_ops {
namespace plan_model {

// An SM of 2048 threads and 64K registers: CTAs limited by threads, registers (a per-kernel count
// a thread) and shared memory; clusters as many as the CTAs make.
class StubOccupancy final : public BwdOccupancy {
 public:
  explicit StubOccupancy(const DeviceLimits& d) : device_(d) {}
  int ctas_per_sm(const BwdKernel& k, int threads, int64_t smem_bytes) const override {
    ++queries;
    const int regs = k.variant == BwdVariant::kFewRows ? 40 : bwd_traits(k.variant).staged ? 96 : 64;
    const int64_t by_threads = 2048 / threads;
    const int64_t by_regs = 65536 / (static_cast<int64_t>(regs) * threads);
    const int64_t by_smem = device_.smem_per_sm / (smem_bytes + static_smem_bytes(k) + device_.smem_reserved_per_block);
    return static_cast<int>(std::min({by_threads, by_regs, by_smem, int64_t{32}}));
  }
  int64_t static_smem_bytes(const BwdKernel& k) const override { return bwd_traits(k.variant).staged ? 4352 : 2304; }
  int64_t resident_clusters(const BwdKernel& k, int threads, int cluster, int64_t smem_bytes) const override {
    return static_cast<int64_t>(ctas_per_sm(k, threads, smem_bytes)) * device_.sm_count / cluster;
  }
  mutable int64_t queries = 0;

 private:
  DeviceLimits device_;
};

// A model of the fused backward kernel's occupancy: an SM of 2048 threads and 64K registers, the
// kernel at 64 registers a thread where its launch bounds ask two CTAs an SM, else 128.
class StubAddOccupancy final : public AddBwdOccupancy {
 public:
  StubAddOccupancy(const DeviceLimits& d, int r_bytes) : sm_count_(d.sm_count), r_bytes_(r_bytes) {}
  int64_t resident_ctas(const AddBwdKernel& k, int threads) const override {
    const int64_t regs = add_bwd_min_blocks(r_bytes_, k.packs) == 2 ? 64 : 128;
    const int64_t per_sm = std::min<int64_t>(2048 / threads, 65536 / (regs * threads));
    return std::max<int64_t>(per_sm, 1) * sm_count_;
  }

 private:
  int64_t sm_count_;
  int r_bytes_;
};

}  // namespace plan_model
}  // namespace reference_ops
