"""{{cookiecutter.project_name}}: custom CUDA operators for PyTorch.

Each op is declared in ops/<op>.py and registered below: the function and the module it gives are
the package's public API. The tests and the benchmark cover every op in ALL_OPS.
"""

from importlib.metadata import PackageNotFoundError as _PackageNotFoundError
from importlib.metadata import version as _version

from ._registration import register as _register
from .ops import {{cookiecutter.op_name}} as _{{cookiecutter.op_name}}_declaration

ALL_OPS = (_{{cookiecutter.op_name}}_declaration.INTERFACE,)

{{cookiecutter.op_name}}, {{cookiecutter.__class_name}} = _register(
    _{{cookiecutter.op_name}}_declaration.INTERFACE,
)

try:
    __version__ = _version("{{cookiecutter.project_slug}}")
except _PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["ALL_OPS", "{{cookiecutter.__class_name}}", "{{cookiecutter.op_name}}"]
