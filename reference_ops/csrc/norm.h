// Shared declarations of the reference_ops normalisation library: argument
// checks used by both the CPU (norm.cpp) and CUDA (norm_*.cu) implementations.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>

#include <tuple>

namespace reference_ops {

// Shape of one normalisation problem: `rows` independent rows of `cols`
// contiguous elements each.
struct NormShape {
  int64_t rows;
  int64_t cols;
};

// Validates x / weight / bias against normalized_shape and returns (rows, cols).
// `op` names the public function in error messages.
NormShape check_norm_args(
    const char* op,
    const at::Tensor& x,
    c10::IntArrayRef normalized_shape,
    const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias);

// Validates the saved statistics and the incoming gradient of a backward op.
NormShape check_norm_bwd_args(
    const char* op,
    const at::Tensor& dy,
    const at::Tensor& x,
    const at::Tensor& rstd,
    c10::IntArrayRef normalized_shape,
    const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias);

// Shape of mean / rstd: the leading (non-normalised) dimensions of x.
std::vector<int64_t> stat_shape(const at::Tensor& x, c10::IntArrayRef normalized_shape);

// dtype of mean / rstd: float32 for float32/float16/bfloat16 input, float64 for float64.
c10::ScalarType stat_dtype(c10::ScalarType x_dtype);

} // namespace reference_ops
