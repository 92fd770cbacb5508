// The op on the GPU: the rowwise engine runs the functors of scaled_softmax.h.
#include "engine/rowwise.cuh"
#include "ops/scaled_softmax.h"

namespace cuop_my_cuda_op::scaled_softmax_op {

const bool kOnCuda = register_kernels<rowwise::Cuda, Forward, Backward>("scaled_softmax", kCuda);

}  // namespace cuop_my_cuda_op::scaled_softmax_op
