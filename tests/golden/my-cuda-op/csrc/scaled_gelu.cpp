// Input checks and device routing for scaled_gelu. Both the forward and the backward
// op land here first, whichever way the op is registered, so every caller gets the same errors.
#include "scaled_gelu.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <iterator>

#include "scaled_gelu_cpu.h"

namespace cuop_my_cuda_op {
namespace {

// The dtypes this project was generated with; the kernels are dispatched for exactly these.
constexpr at::ScalarType kDtypes[] = {at::kFloat, at::kHalf, at::kBFloat16, at::kDouble};
constexpr const char* kDtypeNames = "float32, float16, bfloat16, float64";
// Prefix of every error message.
constexpr const char* kOp = "scaled_gelu: ";

void check_tensor(const at::Tensor& t, const char* name) {
  TORCH_CHECK(t.defined(), kOp, name, " is an undefined tensor; pass a tensor");
  TORCH_CHECK(std::find(std::begin(kDtypes), std::end(kDtypes), t.scalar_type()) != std::end(kDtypes), kOp, name,
              " has dtype ", t.scalar_type(), ", but this build has kernels for ", kDtypeNames,
              " only; convert it (e.g. .float()) or enable that dtype when generating the project");
  TORCH_CHECK(t.is_cuda() || t.is_cpu(), kOp, name, " is on ", t.device(), "; move it to a CUDA device or the CPU");
}

void check_same(const at::Tensor& a, const char* a_name, const at::Tensor& b, const char* b_name) {
  TORCH_CHECK(a.device() == b.device(), kOp, a_name, " is on ", a.device(), " but ", b_name, " is on ", b.device(),
              "; put both on one device");
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), kOp, a_name, " has dtype ", a.scalar_type(), " but ", b_name,
              " has dtype ", b.scalar_type(), "; convert one to the other");
  TORCH_CHECK(a.sizes() == b.sizes(), kOp, a_name, " has shape ", a.sizes(), " but ", b_name, " has shape ", b.sizes(),
              "; they must have the same shape");
}

}  // namespace

at::Tensor scaled_gelu_fwd(const at::Tensor& x, double scale) {
  check_tensor(x, "x");
  const at::Tensor x_contig = x.contiguous();
  if (x.is_cuda()) {
    return scaled_gelu_fwd_cuda(x_contig, scale);
  }
  return scaled_gelu_fwd_cpu(x_contig, scale);
}

at::Tensor scaled_gelu_bwd(const at::Tensor& grad_out, const at::Tensor& saved, double scale) {
  check_tensor(grad_out, "grad_out");
  check_tensor(saved, "saved");
  check_same(grad_out, "grad_out", saved, "saved");
  const at::Tensor grad_contig = grad_out.contiguous();
  const at::Tensor saved_contig = saved.contiguous();
  if (saved.is_cuda()) {
    return scaled_gelu_bwd_cuda(grad_contig, saved_contig, scale);
  }
  return scaled_gelu_bwd_cpu(grad_contig, saved_contig, scale);
}

}  // namespace cuop_my_cuda_op
