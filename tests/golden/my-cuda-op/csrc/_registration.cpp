// The Python module my_cuda_op._C. Loading it runs the kernels' registrations (csrc/ops/,
// through op.cpp); the schemas they serve are defined by my_cuda_op/_registration.py from
// the ops' declarations. The module itself is empty. Built against the stable Python ABI, so one
// wheel serves Python >= 3.10.
#include <Python.h>

extern "C" PyObject* PyInit__C(void) {
  static PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_C", nullptr, -1, nullptr};
  return PyModule_Create(&module_def);
}
