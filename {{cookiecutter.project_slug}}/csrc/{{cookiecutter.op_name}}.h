// Declarations shared by the checked entry points, the CUDA kernels and the CPU kernels.
#pragma once

#include <ATen/core/Tensor.h>

namespace {{cookiecutter.package_name}} {

// Checked entry points, registered as the op: validate the inputs, make them contiguous and run
// the implementation for their device.
at::Tensor {{cookiecutter.op_name}}_fwd(const at::Tensor& x, double scale);
at::Tensor {{cookiecutter.op_name}}_bwd(const at::Tensor& grad_out, const at::Tensor& saved, double scale);

// Device implementations. Inputs are checked, contiguous and on one device; `saved` is what the
// forward saved for the backward ({{cookiecutter.__saved}}).
at::Tensor {{cookiecutter.op_name}}_fwd_cuda(const at::Tensor& x, double scale);
at::Tensor {{cookiecutter.op_name}}_bwd_cuda(const at::Tensor& grad_out, const at::Tensor& saved, double scale);
{%- if cookiecutter.__cpu == 'True' %}
at::Tensor {{cookiecutter.op_name}}_fwd_cpu(const at::Tensor& x, double scale);
at::Tensor {{cookiecutter.op_name}}_bwd_cpu(const at::Tensor& grad_out, const at::Tensor& saved, double scale);
{%- endif %}

}  // namespace {{cookiecutter.package_name}}
