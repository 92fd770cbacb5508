// The ops' checked entry points and their CUDA implementations.
#pragma once

#include <ATen/core/Tensor.h>

namespace {{cookiecutter.package_name}} {

// Checked entry points, registered as the op: validate the inputs, make them contiguous and run
// the implementation for their device.
at::Tensor {{cookiecutter.op_name}}_fwd(const at::Tensor& x, double scale);
at::Tensor {{cookiecutter.op_name}}_bwd(const at::Tensor& grad_out, const at::Tensor& saved, double scale);

// CUDA implementations (the CPU ones are in {{cookiecutter.op_name}}_cpu.h when the project has them).
// Inputs are checked, contiguous and on one device; `saved` is what the forward saved for the
// backward ({{cookiecutter.__saved}}).
at::Tensor {{cookiecutter.op_name}}_fwd_cuda(const at::Tensor& x, double scale);
at::Tensor {{cookiecutter.op_name}}_bwd_cuda(const at::Tensor& grad_out, const at::Tensor& saved, double scale);

}  // namespace {{cookiecutter.package_name}}
