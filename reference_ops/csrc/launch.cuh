// Host side of the launches: the device's limits for the planner, occupancy queries, the
// launch of a (cluster) grid, and compile-time switches over runtime values.
#pragma once

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAFunctions.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <type_traits>
#include <vector>

#include "norm_plan.h"

namespace reference_ops {
namespace cuda {

// Calls f(std::integral_constant<int, P>) for the runtime value p in {1,2,4,8}.
template <typename F>
void packs_switch(int p, F&& f) {
  switch (p) {
    case 1:
      f(std::integral_constant<int, 1>{});
      break;
    case 2:
      f(std::integral_constant<int, 2>{});
      break;
    case 4:
      f(std::integral_constant<int, 4>{});
      break;
    case 8:
      f(std::integral_constant<int, 8>{});
      break;
    default:
      TORCH_CHECK(false, "reference_ops: internal error, unsupported packs per thread ", p);
  }
}

// Runs `f` with the runtime flag `cond` as the compile-time constant `kName`
// (one instantiation for each value).
#define BOOL_SWITCH(cond, kName, ...) \
  [&] {                               \
    if (cond) {                       \
      constexpr bool kName = true;    \
      return __VA_ARGS__();           \
    }                                 \
    constexpr bool kName = false;     \
    return __VA_ARGS__();             \
  }()

// Number of blocks that keep every SM busy for a kernel with this block size. The occupancy query
// costs the host microseconds a call and its answer depends only on the kernel, the block, the
// shared memory and the device, so answers are kept (a few dozen at most: one per kernel and shape
// class a process launches).
template <typename Kernel>
int64_t resident_blocks(Kernel kernel, int block_threads, size_t smem_bytes) {
  struct Entry {
    const void* kernel;
    int block_threads;
    size_t smem_bytes;
    c10::DeviceIndex device;
    int per_sm;
  };
  static std::mutex mutex;
  static std::vector<Entry> known;
  const auto* key = reinterpret_cast<const void*>(kernel);
  const c10::DeviceIndex device = c10::cuda::current_device();
  const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    for (const Entry& e : known) {
      if (e.kernel == key && e.block_threads == block_threads && e.smem_bytes == smem_bytes && e.device == device) {
        return static_cast<int64_t>(e.per_sm) * sms;
      }
    }
  }
  int per_sm = 0;
  C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, block_threads, smem_bytes));
  per_sm = std::max(per_sm, 1);
  const std::lock_guard<std::mutex> lock(mutex);
  known.push_back({key, block_threads, smem_bytes, device, per_sm});
  return static_cast<int64_t>(per_sm) * sms;
}

// The launch shape of a staged kernel: CTAs of `threads_per_row * groups`
// threads, `cluster` CTAs sharing each row (each a slice of `slice_packs`
// packs), `stages` rows per group staged ahead in shared memory.
struct StagedConfig {
  int threads_per_row = 1;
  int groups = 1;
  int cluster = 1;
  int stages = 1;
  int64_t slice_packs = 0;
  size_t smem_bytes = 0;
  int threads() const { return threads_per_row * groups; }
};

// Largest cluster the device runs (8 is portable; none before sm_90).
inline int max_cluster_size() { return at::cuda::getCurrentDeviceProperties()->major >= 9 ? kMaxClusterSize : 1; }

// The limits plan_fwd and plan_bwd need, of the current device (ATen keeps its properties).
inline DeviceLimits device_limits() {
  const cudaDeviceProp* prop = at::cuda::getCurrentDeviceProperties();
  return {prop->multiProcessorCount,
          static_cast<int64_t>(prop->l2CacheSize),
          max_cluster_size(),
          static_cast<int64_t>(prop->sharedMemPerBlockOptin),
          static_cast<int64_t>(prop->sharedMemPerMultiprocessor),
          static_cast<int64_t>(prop->reservedSharedMemPerBlock)};
}

// The launch configuration of `clusters` clusters of cfg's CTAs (plain CTAs when cfg.cluster is 1)
// on `stream`. It points at `attr`, the cluster dimension, which the caller keeps alive.
inline cudaLaunchConfig_t cluster_launch_config(const StagedConfig& cfg, int64_t clusters, cudaLaunchAttribute& attr,
                                                cudaStream_t stream = nullptr) {
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = cfg.cluster;
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  cudaLaunchConfig_t config = {};
  config.attrs = &attr;
  config.numAttrs = cfg.cluster > 1 ? 1 : 0;
  config.gridDim = dim3(static_cast<unsigned>(clusters * cfg.cluster));
  config.blockDim = dim3(cfg.threads());
  config.dynamicSmemBytes = cfg.smem_bytes;
  config.stream = stream;
  return config;
}

// How many clusters of `kernel` (with cfg's shape) are resident at once, after
// raising the kernel's dynamic shared memory limit to cfg.smem_bytes.
template <typename Kernel>
int64_t resident_clusters(Kernel kernel, const StagedConfig& cfg) {
  C10_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(cfg.smem_bytes)));
  int64_t resident = 0;
  if (cfg.cluster > 1) {
    cudaLaunchAttribute attr;
    const cudaLaunchConfig_t config = cluster_launch_config(cfg, /*clusters=*/1, attr);
    int clusters = 0;
    C10_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &config));
    resident = clusters;
  } else {
    int per_sm = 0;
    C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, cfg.threads(), cfg.smem_bytes));
    resident = static_cast<int64_t>(per_sm) * at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  }
  TORCH_CHECK(resident > 0, "reference_ops: internal error, a ", cfg.threads(), "-thread CTA with ", cfg.smem_bytes,
              " bytes of shared memory does not fit on this GPU");
  return resident;
}

// Launches `clusters` clusters of `kernel` (a persistent grid) on the current
// stream.
template <typename Kernel, typename... Args>
void launch_staged(Kernel kernel, const StagedConfig& cfg, int64_t clusters, Args... args) {
  cudaLaunchAttribute attr;
  const cudaLaunchConfig_t config = cluster_launch_config(cfg, clusters, attr, at::cuda::getCurrentCUDAStream());
  C10_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, args...));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace cuda
}  // namespace reference_ops
