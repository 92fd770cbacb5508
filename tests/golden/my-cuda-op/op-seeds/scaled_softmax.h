// The math of scaled_softmax, for the GPU and the CPU alike: the row functors the rowwise engine
// runs. The op's interface (its tensors and scalars) is declared in
// my_cuda_op/ops/scaled_softmax.py, with the float64 reference the tests compare
// against; a functor's fields are the scalars, in the declaration's order.
//
//   forward:  y  = softmax(scale * x) over the last dimension
//   backward: dx = scale * y * (dy - sum(dy * y))      (sum over the row; y is the saved output)
//
// Each direction is a row functor of the rowwise engine (engine/rowwise.cuh says what its members
// mean): what each element adds to a pass over its row, how two partial results combine,
// what a pass leaves for the next one and the outputs. The forward takes two passes over a row: the
// maximum of z = scale * x, then the sum of exp(z - max); then y = exp(z - max) / sum. Subtracting
// the maximum keeps exp from overflowing and changes nothing else (it cancels between numerator and
// sum). The backward takes one: sum(dy * y). acc_t is float for float16/bfloat16/float32 inputs and
// double for float64 (opmath_t, engine/torch_api.h).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "op.h"

// The op's own namespace: each op's helpers (exp_shifted here) stay apart from every other op's.
namespace cuop_my_cuda_op::scaled_softmax_op {

// z = scale * x, rounded once the same way wherever it is computed: the maximum and the outputs
// must see the same z, or the row's largest element comes out a few units in the last place off
// (nvcc would fuse `scale * x - max` into one multiply-add, which does not round the product).
template <typename acc_t>
C10_HOST_DEVICE acc_t scaled(acc_t x, acc_t scale) {
#ifdef __CUDA_ARCH__
  if constexpr (std::is_same_v<acc_t, double>) {
    return __dmul_rn(x, scale);
  } else {
    return __fmul_rn(x, scale);
  }
#else
  return x * scale;
#endif
}

#ifdef __CUDACC__
// 1 / k! for k = 0 ... 12: the series of exp(r) for |r| <= ln(2) / 2, to within 2e-16 (the first
// term left out, r^13 / 13!, is below 1.7e-16). In constant memory, so each multiply-add takes its
// coefficient from there: a double literal takes two instructions to build in a register.
static __constant__ double kExpSeries[13] = {
    1.0,        1.0,         1.0 / 2,      1.0 / 6,       1.0 / 24,       1.0 / 120,      1.0 / 720,
    1.0 / 5040, 1.0 / 40320, 1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800, 1.0 / 479001600};

// exp(d) for d <= 0 in double, within 2 units in the last place: d = j ln(2) + r with |r| <=
// ln(2) / 2, exp(r) from its series, times 2^j by adding j to the exponent; below -707 (exp(d) <
// 1e-307, and for -inf) 0. About 20 instructions an element; CUDA's exp, which also handles d > 0,
// overflow and subnormal results, takes about twice that, and a float64 row spends most of its
// instructions there, so the series is what makes the float64 forward faster.
__device__ __forceinline__ double exp_nonpositive(double d) {
  constexpr double kLog2e = 1.4426950408889634;
  constexpr double kLn2Hi = 6.93147180369123816490e-01;  // ln(2) to 32 bits, so j * kLn2Hi is exact ...
  constexpr double kLn2Lo = 1.90821492927058770002e-10;  // ... and the rest
  const double j = rint(d * kLog2e);
  const double r = fma(-j, kLn2Lo, fma(-j, kLn2Hi, d));
  double p = kExpSeries[12];
#pragma unroll
  for (int k = 11; k >= 0; --k) {
    p = fma(p, r, kExpSeries[k]);
  }
  const double scaled = __hiloint2double(__double2hiint(p) + (int(j) << 20), __double2loint(p));
  return d < -707.0 ? 0.0 : scaled;
}
#endif

// exp(d) for d = z - max <= 0, so at most 1 and a sum of them cannot overflow. On the GPU in float,
// 2^(d log2 e) by the hardware's ex2.approx.ftz: one multiply and one MUFU.EX2 instead of about
// ten instructions, which keeps the kernel bound by memory, not arithmetic. (__expf adds a test and
// two multiplies a value to keep results below 2^-126 as subnormals; flushed to zero here, they
// differ from the exact value by less than 1.2e-38, and the 16-bit forward is faster without
// them.) Its error grows with
// |d|, where the result shrinks faster (2 + 1.2 |d| units in the last place of a value below
// exp(d)), so the absolute error stays below 1e-6 of the row's largest output. In double,
// exp_nonpositive.
template <typename acc_t>
C10_HOST_DEVICE acc_t exp_below_max(acc_t d) {
#ifdef __CUDA_ARCH__
  if constexpr (std::is_same_v<acc_t, float>) {
    constexpr float kLog2e = 1.4426950408889634f;
    float out;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(out) : "f"(d * kLog2e));
    return out;
  } else {
    return exp_nonpositive(d);
  }
#endif
  using std::exp;
  return exp(d);
}

// exp(z - max) of one element: its term of the row's sum. A maximum of -inf (every element seen so
// far is -inf, as masks leave them) subtracts 0 instead, so those terms are exp(-inf) = 0, not
// exp(-inf + inf) = nan; a row of nothing but -inf still comes out nan (0 / 0), as in torch.
template <typename acc_t>
C10_HOST_DEVICE acc_t exp_shifted(acc_t x, acc_t scale, acc_t max) {
  const acc_t shift = max == -std::numeric_limits<acc_t>::infinity() ? acc_t(0) : max;
  return exp_below_max(scaled(x, scale) - shift);
}

// Forward, y = softmax(scale * x): pass 0 finds the row's maximum of z, pass 1 the sum of
// exp(z - max); each y is that exp over the sum, the term pass 1 computed (kKeepTerm). A sum taken
// under a smaller maximum is brought to a larger one by exp(old - new) (kOnline: rows too wide for
// registers are read once for both passes).
template <typename acc_t>
struct Forward {
  acc_t scale;

  static constexpr int kInputs = 1;   // x
  static constexpr int kOutputs = 1;  // y
  static constexpr int kRowOutputs = 0;
  static constexpr int kPasses = 2;
  static constexpr bool kKeepTerm = true;  // outputs() gets exp(z - max) as in[0]
  static constexpr bool kOnline = true;

  struct Sums {
    acc_t value;  // pass 0: a maximum of z; pass 1: a sum of exp(z - max)
  };
  struct Row {
    acc_t max;
    acc_t inv_sum;
  };

  C10_HOST_DEVICE Sums identity(int pass) const {
    return {pass == 0 ? -std::numeric_limits<acc_t>::infinity() : acc_t(0)};
  }
  C10_HOST_DEVICE Sums term(int pass, const acc_t* in, const Row& row) const {
    return {pass == 0 ? scaled(in[0], scale) : exp_shifted(in[0], scale, row.max)};
  }
  C10_HOST_DEVICE Sums combine(int pass, const Sums& a, const Sums& b) const {
    using std::fmax;
    return {pass == 0 ? fmax(a.value, b.value) : a.value + b.value};
  }
  C10_HOST_DEVICE void finish(int pass, const Sums& total, int64_t /*cols*/, Row& row) const {
    if (pass == 0) {
      row.max = total.value;
    } else {
      row.inv_sum = acc_t(1) / total.value;
    }
  }
  C10_HOST_DEVICE Sums rescale(const Row& from, const Row& to, const Sums& sums) const {
    // Equal maxima change nothing (also both -inf, where exp(from - to) would be nan).
    return {from.max == to.max ? sums.value : sums.value * exp_below_max(from.max - to.max)};
  }
  C10_HOST_DEVICE void outputs(const acc_t* in, const Row& row, acc_t* out) const { out[0] = in[0] * row.inv_sum; }
};

// Backward, dx = scale * y * (dy - sum(dy * y)): one pass, the row's sum of dy * y.
template <typename acc_t>
struct Backward {
  acc_t scale;

  static constexpr int kInputs = 2;   // dy, y
  static constexpr int kOutputs = 1;  // dx
  static constexpr int kRowOutputs = 0;
  static constexpr int kPasses = 1;
  static constexpr bool kKeepTerm = false;

  struct Sums {
    acc_t dot;
  };
  struct Row {
    acc_t dot;
  };

  C10_HOST_DEVICE Sums identity(int /*pass*/) const { return {acc_t(0)}; }
  C10_HOST_DEVICE Sums term(int /*pass*/, const acc_t* in, const Row& /*row*/) const { return {in[0] * in[1]}; }
  C10_HOST_DEVICE Sums combine(int /*pass*/, const Sums& a, const Sums& b) const { return {a.dot + b.dot}; }
  C10_HOST_DEVICE void finish(int /*pass*/, const Sums& total, int64_t /*cols*/, Row& row) const {
    row.dot = total.dot;
  }
  C10_HOST_DEVICE void outputs(const acc_t* in, const Row& row, acc_t* out) const {
    out[0] = scale * in[1] * (in[0] - row.dot);
  }
};

}  // namespace cuop_my_cuda_op::scaled_softmax_op
