// Input checks and device routing for {{cookiecutter.op_name}}. Both the forward and the backward
// op land here first, whichever way the op is registered, so every caller gets the same errors.
#include "{{cookiecutter.op_name}}.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <iterator>
{%- if cookiecutter.__cpu == 'True' %}

#include "{{cookiecutter.op_name}}_cpu.h"
{%- endif %}

namespace {{cookiecutter.__ns}} {
namespace {

// The dtypes this project was generated with; the kernels are dispatched for exactly these.
constexpr at::ScalarType kDtypes[] = { {{-cookiecutter.__cpp_dtypes-}} };
constexpr const char* kDtypeNames = "{{cookiecutter.__dtypes}}";
// Prefix of every error message.
constexpr const char* kOp = "{{cookiecutter.op_name}}: ";

void check_tensor(const at::Tensor& t, const char* name) {
  TORCH_CHECK(t.defined(), kOp, name, " is an undefined tensor; pass a tensor");
  TORCH_CHECK(std::find(std::begin(kDtypes), std::end(kDtypes), t.scalar_type()) != std::end(kDtypes), kOp, name,
              " has dtype ", t.scalar_type(), ", but this build has kernels for ", kDtypeNames,
              " only; convert it (e.g. .float()) or enable that dtype when generating the project");
{%- if cookiecutter.__cpu == 'True' %}
  TORCH_CHECK(t.is_cuda() || t.is_cpu(), kOp, name, " is on ", t.device(), "; move it to a CUDA device or the CPU");
{%- else %}
  TORCH_CHECK(t.is_cuda(), kOp, name, " is on ", t.device(),
              ", but this build has CUDA kernels only; move it with .cuda() "
              "(or generate the project with cpu_impl=yes)");
{%- endif %}
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

at::Tensor {{cookiecutter.op_name}}_fwd(const at::Tensor& x, double scale) {
  check_tensor(x, "x");
{%- if cookiecutter.kernel == 'rowwise' %}
  TORCH_CHECK(x.dim() >= 1, kOp,
              "x is a 0-d tensor, but the op reduces over the last dimension; pass a tensor with at least one "
              "dimension (e.g. x.reshape(1))");
{%- endif %}
  const at::Tensor x_contig = x.contiguous();
{%- if cookiecutter.__cpu == 'True' %}
  if (x.is_cuda()) {
    return {{cookiecutter.op_name}}_fwd_cuda(x_contig, scale);
  }
  return {{cookiecutter.op_name}}_fwd_cpu(x_contig, scale);
{%- else %}
  return {{cookiecutter.op_name}}_fwd_cuda(x_contig, scale);
{%- endif %}
}

at::Tensor {{cookiecutter.op_name}}_bwd(const at::Tensor& grad_out, const at::Tensor& saved, double scale) {
  check_tensor(grad_out, "grad_out");
  check_tensor(saved, "saved");
  check_same(grad_out, "grad_out", saved, "saved");
  const at::Tensor grad_contig = grad_out.contiguous();
  const at::Tensor saved_contig = saved.contiguous();
{%- if cookiecutter.__cpu == 'True' %}
  if (saved.is_cuda()) {
    return {{cookiecutter.op_name}}_bwd_cuda(grad_contig, saved_contig, scale);
  }
  return {{cookiecutter.op_name}}_bwd_cpu(grad_contig, saved_contig, scale);
{%- else %}
  return {{cookiecutter.op_name}}_bwd_cuda(grad_contig, saved_contig, scale);
{%- endif %}
}

}  // namespace {{cookiecutter.__ns}}
