// Declares the reference_ops ops to the PyTorch dispatcher and registers their kernels.
// The schema is what torch.compile, FakeTensor and torch.library.opcheck see; the Python side adds
// the fake (shape-only) kernels and the autograd formulas in reference_ops/_registration.py.
#include <Python.h>
#include <torch/library.h>

#include "norm.h"

// `import reference_ops._C` loads this library, which runs the registrations below; the module
// itself is empty. Built against the stable Python ABI, so one wheel serves every CPython >= 3.9.
extern "C" PyObject* PyInit__C(void) {
  static PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_C", nullptr, -1, nullptr};
  return PyModule_Create(&module_def);
}

// mean / rstd have x's leading (non-normalised) shape, float32 (float64 for float64 x). The
// backward ops return empty tensors in place of dweight / dbias when weight / bias is None.
TORCH_LIBRARY(reference_ops, m) {
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
}

// One checked entry point per op serves both backends: it routes by x's device.
TORCH_LIBRARY_IMPL(reference_ops, CUDA, m) {
  m.impl("layer_norm_fwd", &reference_ops::layer_norm_fwd);
  m.impl("layer_norm_bwd", &reference_ops::layer_norm_bwd);
  m.impl("rms_norm_fwd", &reference_ops::rms_norm_fwd);
  m.impl("layer_norm_inference", &reference_ops::layer_norm_inference);
  m.impl("rms_norm_inference", &reference_ops::rms_norm_inference);
  m.impl("rms_norm_bwd", &reference_ops::rms_norm_bwd);
}

TORCH_LIBRARY_IMPL(reference_ops, CPU, m) {
  m.impl("layer_norm_fwd", &reference_ops::layer_norm_fwd);
  m.impl("layer_norm_bwd", &reference_ops::layer_norm_bwd);
  m.impl("rms_norm_fwd", &reference_ops::rms_norm_fwd);
  m.impl("layer_norm_inference", &reference_ops::layer_norm_inference);
  m.impl("rms_norm_inference", &reference_ops::rms_norm_inference);
  m.impl("rms_norm_bwd", &reference_ops::rms_norm_bwd);
}
