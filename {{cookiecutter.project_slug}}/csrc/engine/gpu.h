// How fast the GPU's memory feeds each SM: the one fact about the hardware the kernels' launch
// code asks for. A memory-bound kernel keeps an SM's share of the bandwidth busy only with enough
// bytes in flight, and a GPU whose memory is faster per SM (the same SMs fed by more bandwidth)
// needs more of them, so the launch code takes other shapes there.
#pragma once

#include <cuda_runtime.h>

#include <atomic>

#include "engine/torch_api.h"

namespace {{cookiecutter.__ns}} {

// Memory bandwidth per SM above which a GPU takes the launch shapes tuned for fast memory: peak
// bandwidth (twice the memory clock, times the bus width) over the SM count. The threshold lies
// between the GPUs the two sets of shapes were tuned on (the template's performance page).
constexpr double kFastMemoryPerSm = 30e9;
// The most GPUs a process sees (torch's C10_COMPILE_TIME_MAX_GPUS).
constexpr int kMaxGpus = 512;

// Whether the current GPU's memory bandwidth per SM is above kFastMemoryPerSm; asked once per
// device.
inline bool fast_memory_per_sm() {
  static std::atomic<int> known[kMaxGpus];  // 0: not asked yet, 1: no, 2: yes
  int device = 0;
  OP_CUDA_CHECK(cudaGetDevice(&device));
  int answer = known[device].load(std::memory_order_relaxed);
  if (answer == 0) {
    int clock_khz = 0;
    int bus_bits = 0;
    int sms = 0;
    OP_CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, device));
    OP_CUDA_CHECK(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device));
    OP_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    const double bytes_per_s = 2.0 * 1e3 * clock_khz * (bus_bits / 8);
    answer = bytes_per_s / sms > kFastMemoryPerSm ? 2 : 1;
    known[device].store(answer, std::memory_order_relaxed);
  }
  return answer == 2;
}

}  // namespace {{cookiecutter.__ns}}
