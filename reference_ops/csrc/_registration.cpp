// Declares the reference_ops ops to the PyTorch dispatcher and registers their kernels: the checked
// entry points (norm.cpp) for CPU and CUDA, the autograd kernels (norm_autograd.cpp) for Autograd.
// The schema is what torch.compile, FakeTensor and torch.library.opcheck see; the Python side adds
// only the fake (shape-only) kernels, in reference_ops/_registration.py.
#include <Python.h>
#include <torch/library.h>

#include "norm.h"

// `import reference_ops._C` loads this library, which runs the registrations below; the module
// itself is empty. Built against the stable Python ABI, so one wheel serves every CPython >= 3.9.
extern "C" PyObject* PyInit__C(void) {
  static PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_C", nullptr, -1, nullptr};
  return PyModule_Create(&module_def);
}

// layer_norm / rms_norm are the public ops (reference_ops.layer_norm / rms_norm call them): their
// autograd kernel runs *_fwd, which returns the statistics for the backward, when autograd will want
// a gradient, and *_inference, which writes none, otherwise. mean / rstd have x's leading
// (non-normalised) shape, float32 (float64 for float64 x). The backward ops return empty tensors in
// place of dweight / dbias when weight / bias is None.
TORCH_LIBRARY(reference_ops, m) {
  m.def("layer_norm(Tensor x, int[] normalized_shape, Tensor? weight, Tensor? bias, float eps) -> Tensor");
  m.def("rms_norm(Tensor x, int[] normalized_shape, Tensor? weight, float eps) -> Tensor");
  m.def(
      "layer_norm_fwd(Tensor x, int[] normalized_shape, Tensor? weight, Tensor? bias, float eps) -> (Tensor, Tensor, "
      "Tensor)");
  m.def(
      "layer_norm_bwd(Tensor dy, Tensor x, Tensor mean, Tensor rstd, int[] normalized_shape, Tensor? weight, Tensor? "
      "bias) -> (Tensor, Tensor, Tensor)");
  m.def("rms_norm_fwd(Tensor x, int[] normalized_shape, Tensor? weight, float eps) -> (Tensor, Tensor)");
  m.def("layer_norm_inference(Tensor x, int[] normalized_shape, Tensor? weight, Tensor? bias, float eps) -> Tensor");
  m.def("rms_norm_inference(Tensor x, int[] normalized_shape, Tensor? weight, float eps) -> Tensor");
  m.def("rms_norm_bwd(Tensor dy, Tensor x, Tensor rstd, int[] normalized_shape, Tensor? weight) -> (Tensor, Tensor)");
  // Fused residual add: (y, h) with h = x + residual and y = norm(h), both in the residual's dtype; y in
  // out_dtype when given (x's dtype beside a float32 residual: the dtype the next sublayer computes in).
  m.def(
      "add_layer_norm(Tensor x, Tensor residual, int[] normalized_shape, Tensor? weight, Tensor? bias, float eps, *, "
      "ScalarType? out_dtype=None) -> (Tensor, Tensor)");
  m.def(
      "add_rms_norm(Tensor x, Tensor residual, int[] normalized_shape, Tensor? weight, float eps, *, ScalarType? "
      "out_dtype=None) -> (Tensor, Tensor)");
  m.def(
      "add_layer_norm_fwd(Tensor x, Tensor residual, int[] normalized_shape, Tensor? weight, Tensor? bias, float "
      "eps, *, ScalarType? out_dtype=None) -> (Tensor, Tensor, Tensor, Tensor)");
  m.def(
      "add_rms_norm_fwd(Tensor x, Tensor residual, int[] normalized_shape, Tensor? weight, float eps, *, "
      "ScalarType? out_dtype=None) -> (Tensor, Tensor, Tensor)");
  m.def(
      "add_norm_bwd(Tensor dy, Tensor? dh, Tensor h, Tensor? mean, Tensor rstd, int[] normalized_shape, Tensor? "
      "weight, Tensor? bias, ScalarType x_dtype) -> (Tensor, Tensor, Tensor, Tensor)");
}

namespace {

// One checked entry point per op serves both backends: it routes by x's device. Below autograd
// (inference mode, or called from an autograd kernel) the public ops have no gradient to prepare
// for: they are the inference ops.
void register_kernels(torch::Library& m) {
  m.impl("layer_norm", &reference_ops::layer_norm_inference);
  m.impl("rms_norm", &reference_ops::rms_norm_inference);
  m.impl("layer_norm_fwd", &reference_ops::layer_norm_fwd);
  m.impl("layer_norm_bwd", &reference_ops::layer_norm_bwd);
  m.impl("rms_norm_fwd", &reference_ops::rms_norm_fwd);
  m.impl("layer_norm_inference", &reference_ops::layer_norm_inference);
  m.impl("rms_norm_inference", &reference_ops::rms_norm_inference);
  m.impl("rms_norm_bwd", &reference_ops::rms_norm_bwd);
  m.impl("add_layer_norm", &reference_ops::add_layer_norm_inference);
  m.impl("add_rms_norm", &reference_ops::add_rms_norm_inference);
  m.impl("add_layer_norm_fwd", &reference_ops::add_layer_norm_fwd);
  m.impl("add_rms_norm_fwd", &reference_ops::add_rms_norm_fwd);
  m.impl("add_norm_bwd", &reference_ops::add_norm_bwd);
}

}  // namespace

TORCH_LIBRARY_IMPL(reference_ops, CUDA, m) { register_kernels(m); }

TORCH_LIBRARY_IMPL(reference_ops, CPU, m) { register_kernels(m); }

// Autograd of every op, in C++: whether a call is recorded, the forward's saved tensors and the
// backward's call of *_bwd. For both devices (the Autograd alias key covers AutogradCPU and
// AutogradCUDA); the kernels call the ops above through the dispatcher, below autograd.
TORCH_LIBRARY_IMPL(reference_ops, Autograd, m) {
  m.impl("layer_norm", &reference_ops::autograd::layer_norm);
  m.impl("rms_norm", &reference_ops::autograd::rms_norm);
  m.impl("layer_norm_fwd", &reference_ops::autograd::layer_norm_fwd);
  m.impl("layer_norm_bwd", &reference_ops::autograd::layer_norm_bwd);
  m.impl("rms_norm_fwd", &reference_ops::autograd::rms_norm_fwd);
  m.impl("layer_norm_inference", &reference_ops::autograd::layer_norm_inference);
  m.impl("rms_norm_inference", &reference_ops::autograd::rms_norm_inference);
  m.impl("rms_norm_bwd", &reference_ops::autograd::rms_norm_bwd);
  m.impl("add_layer_norm", &reference_ops::autograd::add_layer_norm);
  m.impl("add_rms_norm", &reference_ops::autograd::add_rms_norm);
  m.impl("add_layer_norm_fwd", &reference_ops::autograd::add_layer_norm_fwd);
  m.impl("add_rms_norm_fwd", &reference_ops::autograd::add_rms_norm_fwd);
  m.impl("add_norm_bwd", &reference_ops::autograd::add_norm_bwd);
}
