{%- if cookiecutter.__stable == 'True' -%}
// The Python module {{cookiecutter.package_name}}._C. Loading it runs the kernels' registrations (csrc/ops/,
// through op.cpp); the schemas they serve are defined by {{cookiecutter.package_name}}/_registration.py from
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
    {{cookiecutter.__ns}}::declare(forward, backward);
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
{%- elif cookiecutter.registration == 'torch_library' -%}
// The Python module {{cookiecutter.package_name}}._C. Loading it runs the kernels' registrations (csrc/ops/,
// through op.cpp); the schemas they serve are defined by {{cookiecutter.package_name}}/_registration.py from
// the ops' declarations. The module itself is empty. Built against the stable Python ABI, so one
// wheel serves Python >= 3.10.
#include <Python.h>

extern "C" PyObject* PyInit__C(void) {
  static PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_C", nullptr, -1, nullptr};
  return PyModule_Create(&module_def);
}
{%- else -%}
// The Python module {{cookiecutter.package_name}}._C: declare() takes an op's schemas from
// {{cookiecutter.package_name}}/_registration.py (made from the op's declaration), call() runs one direction
// of an op by name on the kernels registered in csrc/ops/.
#include <torch/csrc/jit/frontend/function_schema_parser.h>
#include <torch/extension.h>

#include "op.h"

namespace py = pybind11;

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  namespace ops = {{cookiecutter.__ns}};
  m.doc() = "{{cookiecutter.package_name}} kernels";
  m.def(
      "declare",
      [](const std::string& forward, const std::string& backward) {
        ops::declare(torch::jit::parseSchema(forward), torch::jit::parseSchema(backward));
      },
      "Declares an op's forward and backward schemas", py::arg("forward"), py::arg("backward"));
  m.def("call", &ops::call, "Runs <op>_fwd or <op>_bwd on its tensors and scalars", py::arg("name"), py::arg("tensors"),
        py::arg("scalars"));
}
{%- endif %}
