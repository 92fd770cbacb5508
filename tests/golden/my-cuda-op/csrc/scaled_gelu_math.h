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
#include <type_traits>

namespace my_cuda_op {

// exp and division in float on the GPU use the hardware's approximations (one MUFU instruction
// each, relative error near 1e-6 here) instead of the correctly rounded library functions (about
// ten instructions each), so that the kernel stays bound by memory rather than arithmetic. float64
// and the CPU use the library functions.
template <typename acc_t>
C10_HOST_DEVICE acc_t fast_exp(acc_t x) {
#ifdef __CUDA_ARCH__
  if constexpr (std::is_same_v<acc_t, float>) {
    return __expf(x);
  }
#endif
  using std::exp;
  return exp(x);
}

template <typename acc_t>
C10_HOST_DEVICE acc_t fast_div(acc_t a, acc_t b) {
#ifdef __CUDA_ARCH__
  if constexpr (std::is_same_v<acc_t, float>) {
    return __fdividef(a, b);  // 0 for |b| > 2^126, where the quotient is that small anyway
  }
#endif
  return a / b;
}

// GELU's tanh form, gelu(x) = 0.5 * x * (1 + tanh(u)) with u = sqrt(2 / pi) * (x + 0.044715 x^3),
// computed through the logistic function: 0.5 * (1 + tanh(u)) = s = 1 / (1 + exp(-2u)), one exp
// and one division where tanh would cost about twenty instructions.
template <typename acc_t>
struct GeluTanh {
  static constexpr acc_t kSqrt2OverPi = acc_t(0.7978845608028654);
  static constexpr acc_t kCubic = acc_t(0.044715);

  static C10_HOST_DEVICE acc_t inner(acc_t x) { return kSqrt2OverPi * (x + kCubic * x * x * x); }
  static C10_HOST_DEVICE acc_t inner_grad(acc_t x) { return kSqrt2OverPi * (acc_t(1) + acc_t(3) * kCubic * x * x); }
  static C10_HOST_DEVICE acc_t logistic(acc_t x) {
    return fast_div(acc_t(1), acc_t(1) + fast_exp(acc_t(-2) * inner(x)));
  }
};

// Forward of one element: scale * x * s.
template <typename acc_t>
struct ScaledGeluForward {
  acc_t scale;

  C10_HOST_DEVICE acc_t operator()(acc_t x) const { return scale * x * GeluTanh<acc_t>::logistic(x); }
};

// Backward of one element: the incoming gradient dy and the saved input x give dx. With
// s = 0.5 * (1 + tanh(u)), 0.5 * (1 - tanh(u)^2) = 2 s (1 - s), so gelu'(x) = s + 2 x s (1 - s) u'(x).
template <typename acc_t>
struct ScaledGeluBackward {
  acc_t scale;

  C10_HOST_DEVICE acc_t operator()(acc_t dy, acc_t x) const {
    const acc_t s = GeluTanh<acc_t>::logistic(x);
    return dy * scale * (s + acc_t(2) * x * s * (acc_t(1) - s) * GeluTanh<acc_t>::inner_grad(x));
  }
};

}  // namespace my_cuda_op
