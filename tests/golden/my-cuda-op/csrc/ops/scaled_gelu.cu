// The op on the GPU: the elementwise engine runs the functors of scaled_gelu.h.
#include "engine/elementwise.cuh"
#include "ops/scaled_gelu.h"

namespace cuop_my_cuda_op::scaled_gelu_op {

const bool kOnCuda = register_kernels<elementwise::Cuda, Forward, Backward>("scaled_gelu", kCuda);

}  // namespace cuop_my_cuda_op::scaled_gelu_op
