// The elementwise engine on the GPU: runs any elementwise functor (op.h) of N input and M output
// tensors of one shape and dtype, with 16-byte vector loads and stores, or element by element when
// a pointer is not 16-byte aligned. It knows no op: the functor holds the math, the planner
// (elementwise_plan.h) the launch shape.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "engine/elementwise_plan.h"
#include "engine/gpu.h"
#include "op.h"

namespace {{cookiecutter.__ns}}::elementwise {

// kVec elements moved as one aligned 16-byte (or smaller) access; get(i) and set(i, value) take
// element i out and put it in. Elements narrower than 32 bits (float16/bfloat16) are held as
// 32-bit words, two to a register, and taken out where used: held as an array of elements, a
// pack is split into one register per element right after its load, which waits for the data
// before the thread's next load is issued.
template <typename scalar_t, int kVec>
struct alignas(sizeof(scalar_t) * kVec) Pack {
  static constexpr bool kWords =
      sizeof(scalar_t) < sizeof(std::uint32_t) && sizeof(scalar_t) * kVec % sizeof(std::uint32_t) == 0;
  using word_t = std::conditional_t<kWords, std::uint32_t, scalar_t>;
  word_t words[sizeof(scalar_t) * kVec / sizeof(word_t)];

  __device__ __forceinline__ scalar_t get(int i) const {
    scalar_t out;
    memcpy(&out, reinterpret_cast<const char*>(words) + i * sizeof(scalar_t), sizeof(scalar_t));
    return out;
  }
  __device__ __forceinline__ void set(int i, scalar_t value) {
    memcpy(reinterpret_cast<char*>(words) + i * sizeof(scalar_t), &value, sizeof(scalar_t));
  }
};

// The tensors of one launch, passed by value so that the kernel takes any N and M.
template <typename scalar_t, int kInputs, int kOutputs>
struct Pointers {
  const scalar_t* in[kInputs];
  scalar_t* out[kOutputs];
};

// One pack of an input; kEvictLast: the load marked evict_last for L2 (sm_80 and newer, whole
// 16-byte packs; a plain load elsewhere).
template <bool kEvictLast, typename pack_t>
__device__ __forceinline__ pack_t load_pack(const pack_t* ptr) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (kEvictLast && sizeof(pack_t) == sizeof(uint4)) {
    std::uint64_t policy;
    asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
    uint4 words;
    asm volatile("ld.global.L2::cache_hint.v4.u32 { %0, %1, %2, %3 }, [%4], %5;"
                 : "=r"(words.x), "=r"(words.y), "=r"(words.z), "=r"(words.w)
                 : "l"(ptr), "l"(policy));
    pack_t out;
    memcpy(&out, &words, sizeof(out));
    return out;
  }
#endif
  return *ptr;
}

// out_j[i] = op(in_0[i], ..., in_{N-1}[i])_j, computed in acc_t. A block takes kPacks * blockDim.x
// consecutive packs of kVec elements, each thread kPacks of them, blockDim.x apart (so a warp's
// accesses stay contiguous); every load of a thread is issued before any result is computed. The
// grid covers the tensor in one step and loops only past the grid's limit. The last n % kVec
// elements are done one per thread.
template <typename scalar_t, int kVec, int kPacks, bool kEvictLast, typename Op, int kInputs, int kOutputs>
__global__ void elementwise_kernel(Op op, Pointers<scalar_t, kInputs, kOutputs> ptr, int64_t n) {
  using acc_t = opmath_t<scalar_t>;
  using pack_t = Pack<scalar_t, kVec>;
  const int64_t num_packs = n / kVec;
  const int64_t block_packs = int64_t(kPacks) * blockDim.x;
  const int64_t grid_packs = gridDim.x * block_packs;

  for (int64_t first = blockIdx.x * block_packs + threadIdx.x; first < num_packs; first += grid_packs) {
    pack_t src[kPacks][kInputs];
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      const int64_t p = first + k * int64_t(blockDim.x);
#pragma unroll
      for (int a = 0; a < kInputs; ++a) {
        if (p < num_packs) {
          src[k][a] = load_pack<kEvictLast>(reinterpret_cast<const pack_t*>(ptr.in[a]) + p);
        }
      }
    }
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      const int64_t p = first + k * int64_t(blockDim.x);
      if (p < num_packs) {
        pack_t dst[kOutputs];
#pragma unroll
        for (int i = 0; i < kVec; ++i) {
          acc_t args[kInputs];
#pragma unroll
          for (int a = 0; a < kInputs; ++a) {
            args[a] = static_cast<acc_t>(src[k][a].get(i));
          }
          const Values<acc_t, kOutputs> result = apply(op, args);
#pragma unroll
          for (int o = 0; o < kOutputs; ++o) {
            dst[o].set(i, static_cast<scalar_t>(result[o]));
          }
        }
#pragma unroll
        for (int o = 0; o < kOutputs; ++o) {
          reinterpret_cast<pack_t*>(ptr.out[o])[p] = dst[o];
        }
      }
    }
  }
  const int64_t thread = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t i = num_packs * kVec + thread; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    acc_t args[kInputs];
#pragma unroll
    for (int a = 0; a < kInputs; ++a) {
      args[a] = static_cast<acc_t>(ptr.in[a][i]);
    }
    const Values<acc_t, kOutputs> result = apply(op, args);
#pragma unroll
    for (int o = 0; o < kOutputs; ++o) {
      ptr.out[o][i] = static_cast<scalar_t>(result[o]);
    }
  }
}

inline bool is_aligned(const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % kVecBytes == 0; }

template <typename scalar_t, int kInputs, int kOutputs>
constexpr Problem problem_of(int64_t numel, bool aligned, bool reread) {
  Problem p;
  p.numel = numel;
  p.elem_bytes = sizeof(scalar_t);
  p.is_float = std::is_same_v<scalar_t, float>;
  p.inputs = kInputs;
  p.outputs = kOutputs;
  p.aligned = aligned;
  p.reread = reread;
  return p;
}

// Calls fn with each flag as a std::bool_constant.
template <typename Fn>
void with_flags(bool a, bool b, bool c, Fn fn) {
  const auto with_c = [&](auto x, auto y) { c ? fn(x, y, std::true_type{}) : fn(x, y, std::false_type{}); };
  const auto with_b = [&](auto x) { b ? with_c(x, std::true_type{}) : with_c(x, std::false_type{}); };
  a ? with_b(std::true_type{}) : with_b(std::false_type{});
}

// The engine's GPU side, as op.h's register_cuda calls it.
struct Cuda {
  // Inputs of one shape; outputs like the first input.
  template <typename Op>
  static void check(const Call& call) {
    check_same_shapes(call);
  }
  template <typename Op>
  static std::vector<Tensor> outputs(const Call& call) {
    return outputs_like_first(call, kOutputCount<Op>);
  }

  template <typename scalar_t, typename Op>
  static void run(const Op& op, const Call& call, const std::vector<Tensor>& out) {
    constexpr int kInputs = kInputCount<Op>;
    constexpr int kOutputs = kOutputCount<Op>;
    const int64_t n = call.tensors[0].numel();
    if (n == 0) {
      return;
    }
    Pointers<scalar_t, kInputs, kOutputs> ptr;
    bool aligned = true;
    for (int a = 0; a < kInputs; ++a) {
      ptr.in[a] = call.tensors[a].const_data_ptr<scalar_t>();
      aligned = aligned && is_aligned(ptr.in[a]);
    }
    for (int o = 0; o < kOutputs; ++o) {
      ptr.out[o] = out[o].mutable_data_ptr<scalar_t>();
      aligned = aligned && is_aligned(ptr.out[o]);
    }
    const bool fast = fast_memory_per_sm();
    const int64_t blocks = plan(problem_of<scalar_t, kInputs, kOutputs>(n, aligned, call.reread), Gpu{fast}).blocks;
    const cudaStream_t stream = current_stream();
    // The kernel of the planner's shape; its three choices are compile-time, so only the shapes it
    // can pick for this dtype and arity are built.
    with_flags(fast, aligned, call.reread, [&](auto fast, auto whole, auto reread) {
      constexpr Plan s = shape(problem_of<scalar_t, kInputs, kOutputs>(0, whole, reread), Gpu{fast});
      elementwise_kernel<scalar_t, s.vec, s.packs, s.evict_last>
          <<<unsigned(blocks), unsigned(s.threads), 0, stream>>>(op, ptr, n);
    });
    OP_CUDA_KERNEL_LAUNCH_CHECK();
  }
};

}  // namespace {{cookiecutter.__ns}}::elementwise
