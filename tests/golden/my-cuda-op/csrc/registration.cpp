// Declares the my_cuda_op ops to the PyTorch dispatcher and registers their kernels.
// The schema is what torch.compile, FakeTensor and torch.library.opcheck see; the Python side adds
// the fake (shape-only) kernels and the autograd formula in my_cuda_op/_registration.py.
#include <Python.h>
#include <torch/library.h>

#include "scaled_gelu.h"

using my_cuda_op::scaled_gelu_bwd;
using my_cuda_op::scaled_gelu_fwd;

// `import my_cuda_op._C` loads this library, which runs the registrations below; the
// module itself is empty. Built against the stable Python ABI, so one wheel serves Python >= 3.10.
extern "C" PyObject* PyInit__C(void) {
  static PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_C", nullptr, -1, nullptr};
  return PyModule_Create(&module_def);
}

TORCH_LIBRARY(my_cuda_op, m) {
  m.def("scaled_gelu_fwd(Tensor x, float scale) -> Tensor");
  m.def("scaled_gelu_bwd(Tensor grad_out, Tensor saved, float scale) -> Tensor");
}

// One checked entry point per op serves both backends: it routes by device, and gives a clear
// error for a device this build has no kernel for.
TORCH_LIBRARY_IMPL(my_cuda_op, CUDA, m) {
  m.impl("scaled_gelu_fwd", &scaled_gelu_fwd);
  m.impl("scaled_gelu_bwd", &scaled_gelu_bwd);
}

TORCH_LIBRARY_IMPL(my_cuda_op, CPU, m) {
  m.impl("scaled_gelu_fwd", &scaled_gelu_fwd);
  m.impl("scaled_gelu_bwd", &scaled_gelu_bwd);
}
