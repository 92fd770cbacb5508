// The ops' checked entry points and their CUDA implementations.
#pragma once

#include <ATen/core/Tensor.h>

// Every C++ name of the project is in this namespace, which is also its torch.library namespace
// (torch.ops.{{cookiecutter.__ns}}). The cuop_ prefix is the project's own: no name declared or
// macro defined by the headers the sources include (C and C++ libraries, CUDA, pybind11, torch)
// and no op namespace of torch starts with it, so no package name can make it collide; the
// template's tests check that prefix against those headers.
namespace {{cookiecutter.__ns}} {

// Checked entry points, registered as the op: validate the inputs, make them contiguous and run
// the implementation for their device.
at::Tensor {{cookiecutter.op_name}}_fwd(const at::Tensor& x, double scale);
at::Tensor {{cookiecutter.op_name}}_bwd(const at::Tensor& grad_out, const at::Tensor& saved, double scale);

// CUDA implementations (the CPU ones are in {{cookiecutter.op_name}}_cpu.h when the project has them).
// Inputs are checked, contiguous and on one device; `saved` is what the forward saved for the
// backward ({{cookiecutter.__saved}}).
at::Tensor {{cookiecutter.op_name}}_fwd_cuda(const at::Tensor& x, double scale);
at::Tensor {{cookiecutter.op_name}}_bwd_cuda(const at::Tensor& grad_out, const at::Tensor& saved, double scale);

}  // namespace {{cookiecutter.__ns}}
