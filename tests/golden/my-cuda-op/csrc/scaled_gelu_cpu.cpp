// CPU kernels for scaled_gelu: the per-element math of scaled_gelu_math.h over
// chunks of the tensor in parallel (at::parallel_for).
#include "scaled_gelu_cpu.h"

#include <ATen/Dispatch_v2.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/ops/empty_like.h>

#include <cstdint>

#include "scaled_gelu_math.h"

namespace cuop_my_cuda_op {
namespace {

// Elements per parallel task: large enough that scheduling costs little next to the math.
constexpr int64_t kGrainSize = 32768;

}  // namespace

at::Tensor scaled_gelu_fwd_cpu(const at::Tensor& x, double scale) {
  at::Tensor y = at::empty_like(x);
  AT_DISPATCH_V2(x.scalar_type(), "scaled_gelu_fwd_cpu", AT_WRAP([&] {
                   using acc_t = at::opmath_type<scalar_t>;
                   const ScaledGeluForward<acc_t> op{static_cast<acc_t>(scale)};
                   const scalar_t* in = x.const_data_ptr<scalar_t>();
                   scalar_t* out = y.mutable_data_ptr<scalar_t>();
                   at::parallel_for(0, x.numel(), kGrainSize, [&](int64_t begin, int64_t end) {
                     for (int64_t i = begin; i < end; ++i) {
                       out[i] = static_cast<scalar_t>(op(static_cast<acc_t>(in[i])));
                     }
                   });
                 }),
                 at::kFloat, at::kHalf, at::kBFloat16, at::kDouble);
  return y;
}

at::Tensor scaled_gelu_bwd_cpu(const at::Tensor& grad_out, const at::Tensor& saved, double scale) {
  at::Tensor grad_in = at::empty_like(saved);
  AT_DISPATCH_V2(saved.scalar_type(), "scaled_gelu_bwd_cpu", AT_WRAP([&] {
                   using acc_t = at::opmath_type<scalar_t>;
                   const ScaledGeluBackward<acc_t> op{static_cast<acc_t>(scale)};
                   const scalar_t* dy = grad_out.const_data_ptr<scalar_t>();
                   const scalar_t* x = saved.const_data_ptr<scalar_t>();
                   scalar_t* dx = grad_in.mutable_data_ptr<scalar_t>();
                   at::parallel_for(0, saved.numel(), kGrainSize, [&](int64_t begin, int64_t end) {
                     for (int64_t i = begin; i < end; ++i) {
                       dx[i] = static_cast<scalar_t>(op(static_cast<acc_t>(dy[i]), static_cast<acc_t>(x[i])));
                     }
                   });
                 }),
                 at::kFloat, at::kHalf, at::kBFloat16, at::kDouble);
  return grad_in;
}

}  // namespace cuop_my_cuda_op
