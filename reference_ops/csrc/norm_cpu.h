// CPU implementations of the normalisation ops (norm_cpu.cpp), as the CUDA ones in norm.h: fill
// preallocated outputs from checked, contiguous inputs on the CPU. Undefined tensors stand for
// absent weight / bias, and for statistics not wanted (mean for RMSNorm; mean and rstd for the
// inference ops), which are then not written.
#pragma once

#include <ATen/core/Tensor.h>

#include "norm.h"

namespace reference_ops {
namespace cpu {

void norm_fwd(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, at::Tensor& y, at::Tensor& mean,
              at::Tensor& rstd, NormShape shape, double eps, bool rms);
void norm_bwd(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean, const at::Tensor& rstd,
              const at::Tensor& weight, at::Tensor& dx, at::Tensor& dweight, at::Tensor& dbias, NormShape shape);

}  // namespace cpu
}  // namespace reference_ops
