"""{{cookiecutter.op_name}}: a custom CUDA operator for PyTorch, y = {{cookiecutter.__math}}."""

from importlib.metadata import PackageNotFoundError as _PackageNotFoundError
from importlib.metadata import version as _version

from .modules import {{cookiecutter.__class_name}}
from .ops import {{cookiecutter.op_name}}

try:
    __version__ = _version("{{cookiecutter.project_slug}}")
except _PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["{{cookiecutter.__class_name}}", "{{cookiecutter.op_name}}"]
