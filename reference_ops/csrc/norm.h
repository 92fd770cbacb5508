// Shared declarations of the reference_ops normalisation library: argument checks and the
// device-independent entry points used by the CPU (norm.cpp) and CUDA (norm_*.cu) registrations.
#pragma once

#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>

#include <tuple>
#include <type_traits>

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

// Calls f(T{}, W{}) for x's dtype T and the parameter dtype W: W = float for float16 / bfloat16 x
// with float32 parameters (mixed precision), W = T otherwise.
template <typename F>
void dispatch_types(c10::ScalarType x_dtype, bool float_params, F&& f) {
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x_dtype, "reference_ops_norm", [&] {
    if constexpr (std::is_same_v<scalar_t, at::Half> || std::is_same_v<scalar_t, at::BFloat16>) {
      if (float_params) {
        f(scalar_t{}, float{});
        return;
      }
    }
    f(scalar_t{}, scalar_t{});
  });
}

// Whether the parameters (a, else b; either may be undefined) are float32 while x is not.
inline bool has_float_params(const at::Tensor& x, const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor& p = a.defined() ? a : b;
  return p.defined() && p.scalar_type() == at::kFloat && x.scalar_type() != at::kFloat;
}

// A device implementation: fills preallocated outputs from checked, contiguous inputs. Undefined
// tensors stand for absent weight / bias, and for statistics not wanted (mean for RMSNorm; mean
// and rstd for the inference ops).
using NormFwdBackend = void (*)(
    const at::Tensor& x,
    const at::Tensor& weight,
    const at::Tensor& bias,
    at::Tensor& y,
    at::Tensor& mean,
    at::Tensor& rstd,
    NormShape shape,
    double eps,
    bool rms);
using NormBwdBackend = void (*)(
    const at::Tensor& dy,
    const at::Tensor& x,
    const at::Tensor& mean,
    const at::Tensor& rstd,
    const at::Tensor& weight,
    at::Tensor& dx,
    at::Tensor& dweight,
    at::Tensor& dbias,
    NormShape shape);

// The ops, shared by every device: check the arguments, make the inputs contiguous,
// allocate the outputs, then run `backend` (norm.cpp for the CPU, norm_*.cu for CUDA). The
// forward without `stats` (the *_inference ops: no gradient wanted) returns undefined mean /
// rstd, which the kernels then do not write.
std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm_fwd(
    const at::Tensor& x,
    c10::IntArrayRef normalized_shape,
    const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias,
    double eps,
    NormFwdBackend backend,
    bool stats = true);
std::tuple<at::Tensor, at::Tensor> rms_norm_fwd(
    const at::Tensor& x,
    c10::IntArrayRef normalized_shape,
    const std::optional<at::Tensor>& weight,
    double eps,
    NormFwdBackend backend,
    bool stats = true);
std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm_bwd(
    const at::Tensor& dy,
    const at::Tensor& x,
    const at::Tensor& mean,
    const at::Tensor& rstd,
    c10::IntArrayRef normalized_shape,
    const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias,
    NormBwdBackend backend);
std::tuple<at::Tensor, at::Tensor> rms_norm_bwd(
    const at::Tensor& dy,
    const at::Tensor& x,
    const at::Tensor& rstd,
    c10::IntArrayRef normalized_shape,
    const std::optional<at::Tensor>& weight,
    NormBwdBackend backend);

} // namespace reference_ops
