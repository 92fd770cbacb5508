// Declares the my_cuda_op ops to the PyTorch dispatcher and registers their kernels: the
// device kernels and, in C++, the forward's autograd kernel. The schema is what torch.compile,
// FakeTensor and torch.library.opcheck see; the Python side adds the fake (shape-only) kernels in
// my_cuda_op/_registration.py.
#include <Python.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include "scaled_gelu.h"

// `import my_cuda_op._C` loads this library, which runs the registrations below; the
// module itself is empty. Built against the stable Python ABI, so one wheel serves Python >= 3.10.
extern "C" PyObject* PyInit__C(void) {
  static PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_C", nullptr, -1, nullptr};
  return PyModule_Create(&module_def);
}

// Every registration is inside the project's namespace, which is also the ops' namespace.
namespace cuop_my_cuda_op {

TORCH_LIBRARY(cuop_my_cuda_op, m) {
  m.def("scaled_gelu_fwd(Tensor x, float scale) -> Tensor");
  m.def("scaled_gelu_bwd(Tensor grad_out, Tensor saved, float scale) -> Tensor");
}

// One checked entry point per op serves both backends: it routes by device, and gives a clear
// error for a device this build has no kernel for.
TORCH_LIBRARY_IMPL(cuop_my_cuda_op, CUDA, m) {
  m.impl("scaled_gelu_fwd", &scaled_gelu_fwd);
  m.impl("scaled_gelu_bwd", &scaled_gelu_bwd);
}

TORCH_LIBRARY_IMPL(cuop_my_cuda_op, CPU, m) {
  m.impl("scaled_gelu_fwd", &scaled_gelu_fwd);
  m.impl("scaled_gelu_bwd", &scaled_gelu_bwd);
}

// ---------------------------------------------------------------------------------------------
// Autograd in C++ (as torchvision registers its ops'), not Python's torch.library.register_autograd:
// a call then costs what a native torch op's does, a fraction of the Python formula's host cost.
namespace {

// The ops as the dispatcher holds them. The autograd code calls them through it, below autograd,
// never the entry points directly: under torch.compile the calls then reach the fake kernels and
// the tracer, which records both ops, opaque, in its forward and backward graphs.
constexpr const char* kForwardOp = "cuop_my_cuda_op::scaled_gelu_fwd";
constexpr const char* kBackwardOp = "cuop_my_cuda_op::scaled_gelu_bwd";
using ForwardSignature = decltype(scaled_gelu_fwd);
using BackwardSignature = decltype(scaled_gelu_bwd);

at::Tensor dispatch_forward(const at::Tensor& x, double scale) {
  static const auto op = c10::Dispatcher::singleton().findSchemaOrThrow(kForwardOp, "").typed<ForwardSignature>();
  return op.call(x, scale);
}

at::Tensor dispatch_backward(const at::Tensor& grad_out, const at::Tensor& saved, double scale) {
  static const auto op = c10::Dispatcher::singleton().findSchemaOrThrow(kBackwardOp, "").typed<BackwardSignature>();
  return op.call(grad_out, saved, scale);
}

// The autograd formula: the forward saves what the backward op reads and scale; the backward runs it.
struct ScaledGeluFunction : public torch::autograd::Function<ScaledGeluFunction> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x, double scale) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    at::Tensor output = dispatch_forward(x, scale);
    const at::Tensor& saved = x;  // what the backward op reads
    ctx->save_for_backward({saved});
    ctx->saved_data["scale"] = scale;
    return output;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const at::Tensor saved = ctx->get_saved_variables()[0];
    return {dispatch_backward(grads[0], saved, ctx->saved_data["scale"].toDouble()), at::Tensor()};
  }
};

// Records the call only where a gradient is wanted: Function::apply builds an autograd node (a
// large part of a call's host cost) even where it records nothing.
at::Tensor scaled_gelu_fwd_autograd(const at::Tensor& x, double scale) {
  if (at::GradMode::is_enabled() && x.requires_grad()) {
    return ScaledGeluFunction::apply(x, scale);
  }
  at::AutoDispatchBelowADInplaceOrView below_autograd;
  return dispatch_forward(x, scale);
}

}  // namespace

// The forward's autograd, for both devices (the Autograd key covers AutogradCPU and AutogradCUDA).
TORCH_LIBRARY_IMPL(cuop_my_cuda_op, Autograd, m) {
  // The backward op has none: a second derivative is not supported (torch warns where one is taken).
  m.impl("scaled_gelu_fwd", &scaled_gelu_fwd_autograd);
}

}  // namespace cuop_my_cuda_op
