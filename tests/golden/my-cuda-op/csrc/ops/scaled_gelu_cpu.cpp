// scaled_gelu on the CPU: the elementwise engine runs the functors of scaled_gelu.h.
#include "engine/elementwise_cpu.h"
#include "ops/scaled_gelu.h"

namespace cuop_my_cuda_op {

const bool kScaledGeluCpu =
    register_kernels<elementwise::Cpu, scaled_gelu_op::Forward, scaled_gelu_op::Backward>(
        "scaled_gelu", kCpu);

}  // namespace cuop_my_cuda_op
