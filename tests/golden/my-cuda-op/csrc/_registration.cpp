// The Python module my_cuda_op._C. Loading it runs the kernels' registrations (csrc/ops/,
// through op.cpp); the schemas they serve are defined by my_cuda_op/_registration.py from
// the ops' declarations, which it hands to declare(). Built against the stable Python ABI and the
// LibTorch stable ABI, so one wheel serves Python >= 3.10 and every torch from the floor on.
#include <Python.h>

#include <exception>

#include "op.h"

namespace {

// declare(forward, backward): an op's two schemas, as torch.library was given them.
PyObject* declare(PyObject* /*module*/, PyObject* args) {
  const char* forward = nullptr;
  const char* backward = nullptr;
  if (!PyArg_ParseTuple(args, "ss", &forward, &backward)) {
    return nullptr;
  }
  try {
    cuop_my_cuda_op::declare(forward, backward);
  } catch (const std::exception& error) {
    PyErr_SetString(PyExc_RuntimeError, error.what());
    return nullptr;
  }
  Py_RETURN_NONE;
}

PyMethodDef methods[] = {
    {"declare", declare, METH_VARARGS, "Declares an op's forward and backward schemas"},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

// The one symbol the extension exports (setup.py hides the rest).
PyMODINIT_FUNC PyInit__C(void) {
  static PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_C", nullptr, -1, methods};
  return PyModule_Create(&module_def);
}
