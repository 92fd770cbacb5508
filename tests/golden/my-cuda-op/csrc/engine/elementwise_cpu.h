// The elementwise engine on the CPU: the same functors as on the GPU, over chunks of the tensors in
// parallel (parallel_for: at::parallel_for, or the stable ABI's).
#pragma once

#include <cstdint>

#include "op.h"

namespace cuop_my_cuda_op::elementwise {

// Elements per parallel task: large enough that scheduling costs little next to the math.
constexpr int64_t kGrainSize = 32768;

// The engine's CPU side, as op.h's register_kernels calls it.
struct Cpu {
  template <typename Op>
  static void check(const Call& call) {
    check_same_shapes(call);
  }
  template <typename Op>
  static std::vector<Tensor> outputs(const Call& call) {
    return outputs_like_first(call, kOutputCount<Op>);
  }

  template <typename scalar_t, typename Op>
  static void run(const Op& op, const Call& call, const std::vector<Tensor>& out) {
    using acc_t = opmath_t<scalar_t>;
    constexpr int kInputs = kInputCount<Op>;
    constexpr int kOutputs = kOutputCount<Op>;
    const scalar_t* in[kInputs];
    scalar_t* dst[kOutputs];
    for (int a = 0; a < kInputs; ++a) {
      in[a] = call.tensors[a].const_data_ptr<scalar_t>();
    }
    for (int o = 0; o < kOutputs; ++o) {
      dst[o] = out[o].mutable_data_ptr<scalar_t>();
    }
    parallel_for(0, call.tensors[0].numel(), kGrainSize, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        acc_t args[kInputs];
        for (int a = 0; a < kInputs; ++a) {
          args[a] = static_cast<acc_t>(in[a][i]);
        }
        const Values<acc_t, kOutputs> result = apply(op, args);
        for (int o = 0; o < kOutputs; ++o) {
          dst[o][i] = static_cast<scalar_t>(result[o]);
        }
      }
    });
  }
};

}  // namespace cuop_my_cuda_op::elementwise
