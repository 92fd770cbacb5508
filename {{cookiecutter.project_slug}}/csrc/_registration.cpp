{%- if cookiecutter.registration == 'torch_library' -%}
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
