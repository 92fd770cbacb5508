// The op on the CPU: the rowwise engine runs the functors of scaled_softmax.h.
#include "engine/rowwise_cpu.h"
#include "ops/scaled_softmax.h"

namespace cuop_my_cuda_op::scaled_softmax_op {

const bool kOnCpu = register_kernels<rowwise::Cpu, Forward, Backward>("scaled_softmax", kCpu);

}  // namespace cuop_my_cuda_op::scaled_softmax_op
