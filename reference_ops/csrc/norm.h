// The ops' checked entry points (norm.cpp) and autograd kernels (norm_autograd.cpp), both registered
// as the ops' kernels in _registration.cpp, and the CUDA implementations the entry points route to
// (cuda::, in norm_fwd.cu, norm_bwd.cu and add_norm.cu; the CPU ones are in norm_cpu.h).
#pragma once

#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>

#include <optional>
#include <tuple>
#include <type_traits>

namespace reference_ops {

// Checked entry points: validate the arguments, make the inputs contiguous, allocate the outputs
// and run the implementation of x's device. mean / rstd have x's leading (non-normalised) shape,
// float32 (float64 for float64 x); the *_inference ops write no statistics. The backward ops
// return empty tensors in place of dweight / dbias when weight / bias is None.
std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm_fwd(const at::Tensor& x, c10::IntArrayRef normalized_shape,
                                                              const std::optional<at::Tensor>& weight,
                                                              const std::optional<at::Tensor>& bias, double eps);
std::tuple<at::Tensor, at::Tensor> rms_norm_fwd(const at::Tensor& x, c10::IntArrayRef normalized_shape,
                                                const std::optional<at::Tensor>& weight, double eps);
at::Tensor layer_norm_inference(const at::Tensor& x, c10::IntArrayRef normalized_shape,
                                const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
                                double eps);
at::Tensor rms_norm_inference(const at::Tensor& x, c10::IntArrayRef normalized_shape,
                              const std::optional<at::Tensor>& weight, double eps);
std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm_bwd(const at::Tensor& dy, const at::Tensor& x,
                                                              const at::Tensor& mean, const at::Tensor& rstd,
                                                              c10::IntArrayRef normalized_shape,
                                                              const std::optional<at::Tensor>& weight,
                                                              const std::optional<at::Tensor>& bias);
std::tuple<at::Tensor, at::Tensor> rms_norm_bwd(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& rstd,
                                                c10::IntArrayRef normalized_shape,
                                                const std::optional<at::Tensor>& weight);

// Fused residual ops: h = x + residual, y = norm(h), in the residual's dtype (x has it too, or is
// float16 / bfloat16 beside a float32 residual). The backward returns the gradient of h (which
// both x and residual receive), x's in x_dtype when that differs from h's (empty otherwise), and
// dweight / dbias (empty when absent); mean is absent for RMSNorm. y has the residual's dtype, or
// out_dtype when given: x's beside a float32 residual (dy then has it too).
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> add_layer_norm_fwd(
    const at::Tensor& x, const at::Tensor& residual, c10::IntArrayRef normalized_shape,
    const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias, double eps,
    std::optional<c10::ScalarType> out_dtype);
std::tuple<at::Tensor, at::Tensor, at::Tensor> add_rms_norm_fwd(const at::Tensor& x, const at::Tensor& residual,
                                                                c10::IntArrayRef normalized_shape,
                                                                const std::optional<at::Tensor>& weight, double eps,
                                                                std::optional<c10::ScalarType> out_dtype);
std::tuple<at::Tensor, at::Tensor> add_layer_norm_inference(const at::Tensor& x, const at::Tensor& residual,
                                                            c10::IntArrayRef normalized_shape,
                                                            const std::optional<at::Tensor>& weight,
                                                            const std::optional<at::Tensor>& bias, double eps,
                                                            std::optional<c10::ScalarType> out_dtype);
std::tuple<at::Tensor, at::Tensor> add_rms_norm_inference(const at::Tensor& x, const at::Tensor& residual,
                                                          c10::IntArrayRef normalized_shape,
                                                          const std::optional<at::Tensor>& weight, double eps,
                                                          std::optional<c10::ScalarType> out_dtype);
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> add_norm_bwd(
    const at::Tensor& dy, const std::optional<at::Tensor>& dh, const at::Tensor& h,
    const std::optional<at::Tensor>& mean, const at::Tensor& rstd, c10::IntArrayRef normalized_shape,
    const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias, c10::ScalarType x_dtype);

// Autograd kernels (norm_autograd.cpp), registered to the Autograd key of the ops: they decide in
// C++ whether autograd records the call, and call the ops above through the dispatcher below
// autograd. layer_norm / rms_norm run *_fwd and keep its statistics when a gradient is wanted (grad
// mode on and an input that requires grad), the *_inference op otherwise; *_fwd record the
// backward, which calls *_bwd. The ops without a derivative (*_bwd, *_inference) give recorded
// outputs a backward that raises an error saying what to do instead. Each has the signature of the
// entry point of the same name above; the public ops (layer_norm, rms_norm, add_layer_norm,
// add_rms_norm) that of their *_inference entry point, which is their kernel below autograd.
namespace autograd {
decltype(reference_ops::layer_norm_inference) layer_norm;
decltype(reference_ops::rms_norm_inference) rms_norm;
decltype(reference_ops::add_layer_norm_inference) add_layer_norm;
decltype(reference_ops::add_rms_norm_inference) add_rms_norm;
decltype(reference_ops::layer_norm_fwd) layer_norm_fwd;
decltype(reference_ops::rms_norm_fwd) rms_norm_fwd;
decltype(reference_ops::layer_norm_inference) layer_norm_inference;
decltype(reference_ops::rms_norm_inference) rms_norm_inference;
decltype(reference_ops::layer_norm_bwd) layer_norm_bwd;
decltype(reference_ops::rms_norm_bwd) rms_norm_bwd;
decltype(reference_ops::add_layer_norm_fwd) add_layer_norm_fwd;
decltype(reference_ops::add_rms_norm_fwd) add_rms_norm_fwd;
decltype(reference_ops::add_norm_bwd) add_norm_bwd;
}  // namespace autograd

// Shape of one normalisation problem: `rows` independent rows of `cols` contiguous elements.
struct NormShape {
  int64_t rows;
  int64_t cols;
};

// CUDA implementations (the CPU ones are in norm_cpu.h): fill preallocated outputs from checked,
// contiguous inputs on one device. Undefined tensors stand for absent weight / bias, and for
// statistics not wanted (mean for RMSNorm; mean and rstd for the inference ops), which are then not
// written.
namespace cuda {
void norm_fwd(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, at::Tensor& y, at::Tensor& mean,
              at::Tensor& rstd, NormShape shape, double eps, bool rms);
void norm_bwd(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean, const at::Tensor& rstd,
              const at::Tensor& weight, at::Tensor& dx, at::Tensor& dweight, at::Tensor& dbias, NormShape shape);
// The fused residual kernels (add_norm.cu); false, with nothing written, for a call they do not take
// (the caller then adds, and runs norm_fwd / norm_bwd).
bool add_norm_fwd(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& weight, const at::Tensor& bias,
                  at::Tensor& h, at::Tensor& y, at::Tensor& mean, at::Tensor& rstd, NormShape shape, double eps,
                  bool rms);
bool add_norm_bwd(const at::Tensor& dy, const at::Tensor& dh, const at::Tensor& h, const at::Tensor& mean,
                  const at::Tensor& rstd, const at::Tensor& weight, at::Tensor& dsum, at::Tensor& dx,
                  at::Tensor& dweight, at::Tensor& dbias, NormShape shape, bool rms);
}  // namespace cuda

// Calls f(scalar_t{}, weight_t{}) for x's dtype scalar_t and the parameters' dtype weight_t: float for
// float16 / bfloat16 x with float32 parameters (mixed precision), scalar_t otherwise. The kernels'
// template parameters take these names (and add_norm.cu's residual_t and out_t).
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

}  // namespace reference_ops
