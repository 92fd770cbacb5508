// CUDA kernels for scaled_gelu: one grid-stride kernel applies the per-element math of
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

#include "scaled_gelu.h"
#include "scaled_gelu_math.h"

namespace my_cuda_op {
namespace {

// Threads per block: a multiple of the warp size that lets several blocks share an SM.
constexpr int kThreads = 256;
// Bytes per vector access: 16 bytes compile to one LDG.128 / STG.128 per thread.
constexpr int kVecBytes = 16;

// kVec elements moved as one aligned 16-byte (or smaller) access.
template <typename scalar_t, int kVec>
struct alignas(sizeof(scalar_t) * kVec) Pack {
  scalar_t val[kVec];
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

// out[i] = op(in_0[i], ..., in_{kArity-1}[i]), computed in acc_t. Each thread handles whole packs
// of kVec elements in a grid-stride loop; the last n % kVec elements are done one per thread.
template <typename scalar_t, int kVec, int kArity, typename Op>
__global__ void elementwise_kernel(Op op, Inputs<scalar_t, kArity> in, scalar_t* __restrict__ out, int64_t n) {
  using acc_t = at::opmath_type<scalar_t>;
  using pack_t = Pack<scalar_t, kVec>;
  const int64_t start = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t num_packs = n / kVec;

  for (int64_t p = start; p < num_packs; p += stride) {
    pack_t src[kArity];
#pragma unroll
    for (int a = 0; a < kArity; ++a) {
      src[a] = reinterpret_cast<const pack_t*>(in.ptr[a])[p];  // all loads issued before any use
    }
    pack_t dst;
#pragma unroll
    for (int i = 0; i < kVec; ++i) {
      acc_t args[kArity];
#pragma unroll
      for (int a = 0; a < kArity; ++a) {
        args[a] = static_cast<acc_t>(src[a].val[i]);
      }
      dst.val[i] = static_cast<scalar_t>(apply(op, args));
    }
    reinterpret_cast<pack_t*>(out)[p] = dst;
  }
  for (int64_t i = num_packs * kVec + start; i < n; i += stride) {
    acc_t args[kArity];
#pragma unroll
    for (int a = 0; a < kArity; ++a) {
      args[a] = static_cast<acc_t>(in.ptr[a][i]);
    }
    out[i] = static_cast<scalar_t>(apply(op, args));
  }
}

bool is_aligned(const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % kVecBytes == 0; }

// Runs elementwise_kernel on the current stream with as many blocks as the GPU keeps resident.
template <typename scalar_t, int kArity, typename Op>
void launch_elementwise(Op op, Inputs<scalar_t, kArity> in, scalar_t* out, int64_t n) {
  if (n == 0) {
    return;
  }
  constexpr int kVec = kVecBytes / sizeof(scalar_t);
  bool aligned = is_aligned(out);
  for (const scalar_t* ptr : in.ptr) {
    aligned = aligned && is_aligned(ptr);
  }
  const cudaDeviceProp* props = at::cuda::getCurrentDeviceProperties();
  const int64_t resident_blocks = int64_t(props->multiProcessorCount) * (props->maxThreadsPerMultiProcessor / kThreads);
  const int64_t work_items = aligned ? (n + kVec - 1) / kVec : n;
  const int64_t blocks = std::min((work_items + kThreads - 1) / kThreads, resident_blocks);
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  if (aligned) {
    elementwise_kernel<scalar_t, kVec, kArity><<<blocks, kThreads, 0, stream>>>(op, in, out, n);
  } else {
    elementwise_kernel<scalar_t, 1, kArity><<<blocks, kThreads, 0, stream>>>(op, in, out, n);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
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

}  // namespace my_cuda_op
