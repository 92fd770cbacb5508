"""scaled_gelu: a custom CUDA operator for PyTorch, y = scale * gelu(x)."""

from importlib.metadata import PackageNotFoundError as _PackageNotFoundError
from importlib.metadata import version as _version

from .modules import ScaledGelu
from .ops import scaled_gelu

try:
    __version__ = _version("my-cuda-op")
except _PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["ScaledGelu", "scaled_gelu"]
