// Device helpers shared by the forward (norm_fwd.cu) and backward
// (norm_bwd.cu) kernels: 16-byte packs, deterministic warp / block sums,
// the row-width -> launch-configuration choice, and compile-time switches.
#pragma once

#include <ATen/OpMathType.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

#include <cstdint>
#include <type_traits>

namespace reference_ops {
namespace cuda {

// Bytes moved by one vectorised global load or store (LDG.128 / STG.128).
constexpr int kPackBytes = 16;

// Largest number of threads that share one row.
constexpr int kMaxThreadsPerRow = 1024;

// Threads per block when several rows share a block (threads_per_row <= 32).
constexpr int kRowsBlockThreads = 256;

// N elements of T stored together so one instruction moves them.
template <typename T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

template <typename T, int N>
__device__ __forceinline__ Pack<T, N> load_pack(const T* base, int64_t pack_index) {
  return reinterpret_cast<const Pack<T, N>*>(base)[pack_index];
}

template <typename T, int N>
__device__ __forceinline__ void store_pack(T* base, int64_t pack_index, const Pack<T, N>& p) {
  reinterpret_cast<Pack<T, N>*>(base)[pack_index] = p;
}

// Sum over `width` consecutive lanes (a power of two <= 32). Butterfly order
// is fixed, so the result is bitwise reproducible and identical on every lane.
template <typename U>
__device__ __forceinline__ U group_sum(U v, int width) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    if (offset < width) {
      v += __shfl_xor_sync(0xffffffffu, v, offset);
    }
  }
  return v;
}

// Sum over the row group of `threads_per_row` threads (a power of two; groups
// wider than a warp are whole warps, several groups may share a block). Warp
// sums go through shared memory and every thread adds its group's warp sums in
// the same fixed order. Every thread of the block must call it.
template <typename U>
__device__ __forceinline__ U row_sum(U v, int threads_per_row, U* scratch /* [32] */) {
  if (threads_per_row <= 32) {
    return group_sum(v, threads_per_row);
  }
  v = group_sum(v, 32);
  const int warp = threadIdx.x >> 5;
  if ((threadIdx.x & 31) == 0) {
    scratch[warp] = v;
  }
  __syncthreads();
  const int warps_per_group = threads_per_row >> 5;
  const int first = warp - warp % warps_per_group;
  U total = U(0);
  for (int i = 0; i < warps_per_group; ++i) {
    total += scratch[first + i];
  }
  __syncthreads();
  return total;
}

// Two sums at once (halves the barriers when a kernel needs both).
template <typename U>
struct Pair {
  U a;
  U b;
};

template <typename U>
__device__ __forceinline__ Pair<U> row_sum2(Pair<U> v, int threads_per_row, U* scratch /* [64] */) {
  if (threads_per_row <= 32) {
    return {group_sum(v.a, threads_per_row), group_sum(v.b, threads_per_row)};
  }
  v.a = group_sum(v.a, 32);
  v.b = group_sum(v.b, 32);
  const int warp = threadIdx.x >> 5;
  if ((threadIdx.x & 31) == 0) {
    scratch[warp] = v.a;
    scratch[32 + warp] = v.b;
  }
  __syncthreads();
  const int warps_per_group = threads_per_row >> 5;
  const int first = warp - warp % warps_per_group;
  Pair<U> total{U(0), U(0)};
  for (int i = 0; i < warps_per_group; ++i) {
    total.a += scratch[first + i];
    total.b += scratch[32 + first + i];
  }
  __syncthreads();
  return total;
}

__device__ __forceinline__ float rsqrt_acc(float v) {
  return rsqrtf(v);
}
__device__ __forceinline__ double rsqrt_acc(double v) {
  return rsqrt(v);
}

inline bool is_aligned(const void* p, int64_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

inline int64_t next_pow2(int64_t v) {
  int64_t p = 1;
  while (p < v) {
    p <<= 1;
  }
  return p;
}

// How a row of `num_packs` packs is spread over threads: `threads_per_row`
// threads (a power of two) each holding `packs_per_thread` packs in registers.
struct RowConfig {
  int threads_per_row;
  int packs_per_thread;
};

// Spreads `num_packs` over at most `max_threads` threads with about
// `target_packs` packs each; packs_per_thread is a power of two.
inline RowConfig choose_row_config(int64_t num_packs, int64_t target_packs, int64_t max_threads) {
  const int64_t tpr = std::min<int64_t>(next_pow2((num_packs + target_packs - 1) / target_packs), max_threads);
  const int64_t ppt = next_pow2((num_packs + tpr - 1) / tpr);
  return {static_cast<int>(tpr), static_cast<int>(ppt)};
}

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

// Number of blocks that keep every SM busy for a kernel with this block size.
template <typename Kernel>
int64_t resident_blocks(Kernel kernel, int block_threads, size_t smem_bytes) {
  int per_sm = 0;
  C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, block_threads, smem_bytes));
  const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  return static_cast<int64_t>(std::max(per_sm, 1)) * sms;
}

} // namespace cuda
} // namespace reference_ops
