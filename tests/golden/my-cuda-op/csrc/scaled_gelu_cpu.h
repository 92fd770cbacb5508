// CPU implementations of scaled_gelu. Inputs are checked, contiguous and on the CPU.
#pragma once

#include <ATen/core/Tensor.h>

namespace cuop_my_cuda_op {

at::Tensor scaled_gelu_fwd_cpu(const at::Tensor& x, double scale);
at::Tensor scaled_gelu_bwd_cpu(const at::Tensor& grad_out, const at::Tensor& saved, double scale);

}  // namespace cuop_my_cuda_op
