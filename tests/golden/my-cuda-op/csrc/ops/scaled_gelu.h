// The math of scaled_gelu, for the GPU and the CPU alike: the functors the elementwise engine
// calls per element. The op's interface (its tensors and scalars) is declared in
// my_cuda_op/ops/scaled_gelu.py, with the float64 reference the tests compare
// against; a functor's fields are the scalars, in the declaration's order.
//
//   forward:  y  = scale * gelu(x), GELU in its tanh approximation (Hendrycks & Gimpel, 2016)
//   backward: dx = dy * scale * gelu'(x)
//
// acc_t is float for float16/bfloat16/float32 inputs and double for float64 (opmath_t, engine/torch_api.h).
#pragma once

#include <cmath>
#include <type_traits>

#include "op.h"

// The op's own namespace: each op's helpers (GeluTanh here) stay apart from every other op's.
namespace cuop_my_cuda_op::scaled_gelu_op {

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

#ifdef __CUDACC__
// The logistic function in double on the GPU, 1 / (1 + exp(-2u)), in about 25 double-precision
// instructions where CUDA's exp and IEEE division take about 40: the float64 kernels were bound by
// them, not by memory.
//
// With e = exp(-2|u|) in (0, 1], the logistic is 1 / (1 + e) for u >= 0 and e / (1 + e) for u < 0,
// so exp only ever sees arguments <= 0 and the division a denominator in [1, 2]:
// - exp(d), d <= 0: d = j ln(2) + r with |r| <= ln(2) / 2; exp(r) from its Taylor series to r^12
//   (the next term is below 1.7e-16), times 2^j by adding j to the exponent bits; 0 below -707,
//   where exp(d) < 1e-307 (also for d = -inf). Within 2 units in the last place.
// - 1 / b, b in [1, 2]: the hardware's approximate reciprocal (MUFU.RCP64H, about 20 correct bits)
//   refined by one third-order Newton step, r (1 + t + t^2) with t = 1 - b r, to full precision.
// The coefficients 1 / k! sit in constant memory: a double literal takes two instructions to build
// in a register, a constant-memory operand none.
static __constant__ double kInvFactorial[13] = {
    1.0,        1.0,         1.0 / 2,      1.0 / 6,       1.0 / 24,       1.0 / 120,      1.0 / 720,
    1.0 / 5040, 1.0 / 40320, 1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800, 1.0 / 479001600};

__device__ __forceinline__ double logistic_double(double u) {
  constexpr double kLog2e = 1.4426950408889634;
  constexpr double kLn2Hi = 6.93147180369123816490e-01;  // ln(2) to 32 bits: j * kLn2Hi is exact
  constexpr double kLn2Lo = 1.90821492927058770002e-10;  // the rest of ln(2)
  const double d = -2.0 * fabs(u);
  const double j = rint(d * kLog2e);
  const double r = fma(-j, kLn2Lo, fma(-j, kLn2Hi, d));
  double series = kInvFactorial[12];
#pragma unroll
  for (int k = 11; k >= 0; --k) {
    series = fma(series, r, kInvFactorial[k]);
  }
  const int exponent = int(unsigned(__double2int_rn(j)) << 20);  // j in the exponent field
  const double e = d < -707.0 ? 0.0 : __hiloint2double(__double2hiint(series) + exponent, __double2loint(series));
  const double b = 1.0 + e;
  double q;
  asm("rcp.approx.ftz.f64 %0, %1;" : "=d"(q) : "d"(b));
  const double t = fma(-b, q, 1.0);
  q = fma(q, fma(t, t, t), q);
  return u >= 0.0 ? q : e * q;
}
#endif

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
#ifdef __CUDA_ARCH__
    if constexpr (std::is_same_v<acc_t, double>) {
      return logistic_double(inner(x));
    }
#endif
    return fast_div(acc_t(1), acc_t(1) + fast_exp(acc_t(-2) * inner(x)));
  }
};

// Forward of one element, y from x: scale * x * s.
template <typename acc_t>
struct Forward {
  acc_t scale;

  C10_HOST_DEVICE acc_t operator()(acc_t x) const { return scale * x * GeluTanh<acc_t>::logistic(x); }
};

// Backward of one element: the gradient dy of y and the saved input x give dx (the backward's
// values come in the declaration's order: the outputs' gradients, then the saved tensors). With
// s = 0.5 * (1 + tanh(u)), 0.5 * (1 - tanh(u)^2) = 2 s (1 - s), so gelu'(x) = s + 2 x s (1 - s) u'(x).
template <typename acc_t>
struct Backward {
  acc_t scale;

  C10_HOST_DEVICE acc_t operator()(acc_t dy, acc_t x) const {
    const acc_t s = GeluTanh<acc_t>::logistic(x);
    return dy * scale * (s + acc_t(2) * x * s * (acc_t(1) - s) * GeluTanh<acc_t>::inner_grad(x));
  }
};

}  // namespace cuop_my_cuda_op::scaled_gelu_op
