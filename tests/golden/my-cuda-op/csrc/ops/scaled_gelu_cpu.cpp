// The op on the CPU: the elementwise engine runs the functors of scaled_gelu.h.
#include "engine/elementwise_cpu.h"
#include "ops/scaled_gelu.h"

namespace cuop_my_cuda_op::scaled_gelu_op {

const bool kOnCpu = register_kernels<elementwise::Cpu, Forward, Backward>("scaled_gelu", kCpu);

}  // namespace cuop_my_cuda_op::scaled_gelu_op
