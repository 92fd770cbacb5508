// The ops' checked entry points and their CUDA implementations.
#pragma once

#include <ATen/core/Tensor.h>

namespace my_cuda_op {

// Checked entry points, registered as the op: validate the inputs, make them contiguous and run
// the implementation for their device.
at::Tensor scaled_gelu_fwd(const at::Tensor& x, double scale);
at::Tensor scaled_gelu_bwd(const at::Tensor& grad_out, const at::Tensor& saved, double scale);

// CUDA implementations (the CPU ones are in scaled_gelu_cpu.h when the project has them).
// Inputs are checked, contiguous and on one device; `saved` is what the forward saved for the
// backward (x).
at::Tensor scaled_gelu_fwd_cuda(const at::Tensor& x, double scale);
at::Tensor scaled_gelu_bwd_cuda(const at::Tensor& grad_out, const at::Tensor& saved, double scale);

}  // namespace my_cuda_op
