// scaled_gelu on the GPU: the elementwise engine runs the functors of scaled_gelu.h.
#include "engine/elementwise.cuh"
#include "ops/scaled_gelu.h"

namespace cuop_my_cuda_op {

const bool kScaledGeluCuda =
    register_kernels<elementwise::Cuda, scaled_gelu_op::Forward, scaled_gelu_op::Backward>(
        "scaled_gelu", kCuda);

}  // namespace cuop_my_cuda_op
