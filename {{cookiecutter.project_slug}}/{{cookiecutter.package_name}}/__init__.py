"""{{cookiecutter.op_name}}: a custom CUDA operator for PyTorch, y = {{cookiecutter.__math}}."""

from importlib.metadata import PackageNotFoundError, version

from .modules import {{cookiecutter.__class_name}}
from .ops import {{cookiecutter.op_name}}

try:
    __version__ = version("{{cookiecutter.project_slug}}")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["{{cookiecutter.__class_name}}", "{{cookiecutter.op_name}}"]
