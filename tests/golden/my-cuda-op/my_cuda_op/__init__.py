"""scaled_gelu: a custom CUDA operator for PyTorch, y = scale * gelu(x)."""

from importlib.metadata import PackageNotFoundError, version

from .modules import ScaledGelu
from .ops import scaled_gelu

try:
    __version__ = version("my-cuda-op")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["ScaledGelu", "scaled_gelu"]
