// CUDA kernels for scaled_gelu: one kernel applies the per-element math of
// scaled_gelu_math.h with 16-byte vector loads and stores, or element by element when a
// pointer is not 16-byte aligned.
#include <ATen/Dispatch_v2.h>
#include <ATen/OpMathType.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/ops/empty_like.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "scaled_gelu.h"
#include "scaled_gelu_gpu.h"
#include "scaled_gelu_math.h"

namespace cuop_my_cuda_op {
namespace {

// Bytes per vector access: 16 bytes compile to one LDG.128 / STG.128 per thread.
constexpr int kVecBytes = 16;
// How a launch covers the tensor: threads per block, and 16-byte packs per thread, each thread
// loading all of its packs before it computes any (so they are in flight together); evict_last:
// the loads are marked to stay in L2 (see launch_shape).
struct Shape {
  int threads;
  int packs;
  bool evict_last = false;
};

// The shape per dtype and direction (forward: 1 input, backward: 2), chosen with the generated
// benchmark on GPUs that differ in how fast memory feeds each SM (fast_memory_per_sm, in
// scaled_gelu_gpu.h); the figures are on the template's performance page.
// A memory-bound kernel keeps each SM's share of the bandwidth busy only with enough bytes in
// flight, and a GPU whose memory is faster per SM needs more of them.
// - Slower memory per SM: blocks of 512 threads taking one pack each (256 or 1024 threads, or 2
//   packs, were slower). float64 takes 256 threads of 4 packs: its exp and division are long
//   chains of dependent instructions, which one pack did not give a thread enough of to cover
//   their latency, and 512 threads at float64's register count leave one block on an SM.
// - Faster memory per SM: 128 threads of 2 packs forward, one pack backward, but float32 256
//   threads of 4 (each the fastest of the shapes tried there).
//   The float32 forward marks its loads of x evict_last for L2, as torch.compile's Triton kernels
//   mark the loads of a tensor read again, so x's lines outlast y's there and the next kernel that
//   reads x (the backward, the next call) finds part of it in L2. Loads marked evict_first, or
//   taken through the non-coherent cache without L1, were slower; streaming stores (st.global.cs)
//   helped the forward but cost the backward more, so the stores stay plain.
template <typename scalar_t, int kArity, bool kFastMemory>
constexpr Shape launch_shape() {
  if constexpr (!kFastMemory) {
    return sizeof(scalar_t) == sizeof(double) ? Shape{256, 4} : Shape{512, 1};
  } else if constexpr (kArity == 1) {
    return {128, 2, std::is_same_v<scalar_t, float>};
  } else {
    return std::is_same_v<scalar_t, float> ? Shape{256, 4} : Shape{128, 1};
  }
}

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

// The input pointers of one launch, passed by value so the kernel takes any arity.
template <typename scalar_t, int kArity>
struct Inputs {
  const scalar_t* ptr[kArity];
};

template <typename scalar_t, typename... Ptrs>
Inputs<scalar_t, sizeof...(Ptrs)> inputs_of(Ptrs... ptrs) {
  Inputs<scalar_t, sizeof...(Ptrs)> inputs;
  int i = 0;
  ((inputs.ptr[i++] = ptrs), ...);
  return inputs;
}

// Calls op with the kArity arguments of one element.
template <typename Op, typename acc_t>
__device__ __forceinline__ acc_t apply(const Op& op, const acc_t (&args)[1]) {
  return op(args[0]);
}
template <typename Op, typename acc_t>
__device__ __forceinline__ acc_t apply(const Op& op, const acc_t (&args)[2]) {
  return op(args[0], args[1]);
}

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

// out[i] = op(in_0[i], ..., in_{kArity-1}[i]), computed in acc_t. A block takes kPacks * blockDim.x
// consecutive packs of kVec elements, each thread kPacks of them, blockDim.x apart (so a warp's
// accesses stay contiguous); the grid covers the tensor in one step, and loops only past the grid's
// limit of 2^31 - 1 blocks. The last n % kVec elements are done one per thread.
template <typename scalar_t, int kVec, int kArity, int kPacks, bool kEvictLast, typename Op>
__global__ void elementwise_kernel(Op op, Inputs<scalar_t, kArity> in, scalar_t* __restrict__ out, int64_t n) {
  using acc_t = at::opmath_type<scalar_t>;
  using pack_t = Pack<scalar_t, kVec>;
  const int64_t num_packs = n / kVec;
  const int64_t block_packs = int64_t(kPacks) * blockDim.x;  // consecutive packs a block takes
  const int64_t grid_packs = gridDim.x * block_packs;

  for (int64_t first = blockIdx.x * block_packs + threadIdx.x; first < num_packs; first += grid_packs) {
    pack_t src[kPacks][kArity];
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      const int64_t p = first + k * int64_t(blockDim.x);
#pragma unroll
      for (int a = 0; a < kArity; ++a) {
        if (p < num_packs) {
          // all loads issued before any use
          src[k][a] = load_pack<kEvictLast>(reinterpret_cast<const pack_t*>(in.ptr[a]) + p);
        }
      }
    }
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      const int64_t p = first + k * int64_t(blockDim.x);
      if (p < num_packs) {
        pack_t dst;
#pragma unroll
        for (int i = 0; i < kVec; ++i) {
          acc_t args[kArity];
#pragma unroll
          for (int a = 0; a < kArity; ++a) {
            args[a] = static_cast<acc_t>(src[k][a].get(i));
          }
          dst.set(i, static_cast<scalar_t>(apply(op, args)));
        }
        reinterpret_cast<pack_t*>(out)[p] = dst;
      }
    }
  }
  const int64_t thread = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t i = num_packs * kVec + thread; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    acc_t args[kArity];
#pragma unroll
    for (int a = 0; a < kArity; ++a) {
      args[a] = static_cast<acc_t>(in.ptr[a][i]);
    }
    out[i] = static_cast<scalar_t>(apply(op, args));
  }
}

bool is_aligned(const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % kVecBytes == 0; }

// Runs elementwise_kernel on the current stream in its launch_shape, one block per shape.threads *
// shape.packs packs: the hardware hands a new block to an SM as soon as one retires, so no SM
// waits at the end. (A grid of only the blocks the GPU holds at once, each looping over the
// tensor, was slower in every dtype and direction.)
template <bool kFastMemory, typename scalar_t, int kArity, typename Op>
void launch_shaped(Op op, Inputs<scalar_t, kArity> in, scalar_t* out, int64_t n) {
  constexpr Shape shape = launch_shape<scalar_t, kArity, kFastMemory>();
  constexpr int kVec = kVecBytes / sizeof(scalar_t);
  bool aligned = is_aligned(out);
  for (const scalar_t* ptr : in.ptr) {
    aligned = aligned && is_aligned(ptr);
  }
  const int64_t per_block = int64_t(shape.threads) * shape.packs;
  const int64_t work_items = aligned ? (n + kVec - 1) / kVec : n;
  const int64_t blocks =
      std::min<int64_t>((work_items + per_block - 1) / per_block, std::numeric_limits<int32_t>::max());
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  if (aligned) {
    elementwise_kernel<scalar_t, kVec, kArity, shape.packs, shape.evict_last>
        <<<blocks, shape.threads, 0, stream>>>(op, in, out, n);
  } else {
    elementwise_kernel<scalar_t, 1, kArity, shape.packs, false><<<blocks, shape.threads, 0, stream>>>(op, in, out, n);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename scalar_t, int kArity, typename Op>
void launch_elementwise(Op op, Inputs<scalar_t, kArity> in, scalar_t* out, int64_t n) {
  if (n == 0) {
    return;
  }
  if (fast_memory_per_sm()) {
    launch_shaped<true>(op, in, out, n);
  } else {
    launch_shaped<false>(op, in, out, n);
  }
}

}  // namespace

at::Tensor scaled_gelu_fwd_cuda(const at::Tensor& x, double scale) {
  const c10::cuda::CUDAGuard device_guard(x.device());
  at::Tensor y = at::empty_like(x);
  AT_DISPATCH_V2(x.scalar_type(), "scaled_gelu_fwd_cuda", AT_WRAP([&] {
                   using acc_t = at::opmath_type<scalar_t>;
                   const ScaledGeluForward<acc_t> op{static_cast<acc_t>(scale)};
                   launch_elementwise<scalar_t, 1>(op, inputs_of<scalar_t>(x.const_data_ptr<scalar_t>()),
                                                   y.mutable_data_ptr<scalar_t>(), x.numel());
                 }),
                 at::kFloat, at::kHalf, at::kBFloat16, at::kDouble);
  return y;
}

at::Tensor scaled_gelu_bwd_cuda(const at::Tensor& grad_out, const at::Tensor& saved, double scale) {
  const c10::cuda::CUDAGuard device_guard(saved.device());
  at::Tensor grad_in = at::empty_like(saved);
  AT_DISPATCH_V2(saved.scalar_type(), "scaled_gelu_bwd_cuda", AT_WRAP([&] {
                   using acc_t = at::opmath_type<scalar_t>;
                   const ScaledGeluBackward<acc_t> op{static_cast<acc_t>(scale)};
                   launch_elementwise<scalar_t, 2>(
                       op, inputs_of<scalar_t>(grad_out.const_data_ptr<scalar_t>(), saved.const_data_ptr<scalar_t>()),
                       grad_in.mutable_data_ptr<scalar_t>(), saved.numel());
                 }),
                 at::kFloat, at::kHalf, at::kBFloat16, at::kDouble);
  return grad_in;
}

}  // namespace cuop_my_cuda_op
