// The math of scaled_gelu, shared by the CUDA and the CPU kernels: edit it here, and the
// plain-PyTorch reference in my_cuda_op/reference.py to match.
//
//   forward:  y  = scale * gelu(x), GELU in its tanh approximation (Hendrycks & Gimpel, 2016)
//   backward: dx = dy * scale * gelu'(x)
//
// acc_t is float for float16/bfloat16/float32 inputs and double for float64 (at::opmath_type).
#pragma once

#include <c10/macros/Macros.h>

#include <cmath>

namespace my_cuda_op {

template <typename acc_t>
struct GeluTanh {
  static constexpr acc_t kSqrt2OverPi = acc_t(0.7978845608028654);
  static constexpr acc_t kCubic = acc_t(0.044715);

  static C10_HOST_DEVICE acc_t inner(acc_t x) { return kSqrt2OverPi * (x + kCubic * x * x * x); }
};

// Forward of one element.
template <typename acc_t>
struct ScaledGeluForward {
  acc_t scale;

  C10_HOST_DEVICE acc_t operator()(acc_t x) const {
    using std::tanh;
    return scale * acc_t(0.5) * x * (acc_t(1) + tanh(GeluTanh<acc_t>::inner(x)));
  }
};

// Backward of one element: the incoming gradient dy and the saved input x give dx.
template <typename acc_t>
struct ScaledGeluBackward {
  acc_t scale;

  C10_HOST_DEVICE acc_t operator()(acc_t dy, acc_t x) const {
    using std::tanh;
    const acc_t t = tanh(GeluTanh<acc_t>::inner(x));
    const acc_t d_inner = GeluTanh<acc_t>::kSqrt2OverPi * (acc_t(1) + acc_t(3) * GeluTanh<acc_t>::kCubic * x * x);
    return dy * scale * acc_t(0.5) * ((acc_t(1) + t) + x * (acc_t(1) - t * t) * d_inner);
  }
};

}  // namespace my_cuda_op
