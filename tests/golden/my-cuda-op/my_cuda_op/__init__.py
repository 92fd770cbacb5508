"""My CUDA Op: custom CUDA operators for PyTorch.

Each op is declared in ops/<op>.py and registered below: the function and the module it gives are
the package's public API. The tests and the benchmark cover every op in ALL_OPS.
"""

from importlib.metadata import PackageNotFoundError as _PackageNotFoundError
from importlib.metadata import version as _version

from ._registration import register as _register
from .ops import scaled_gelu as _scaled_gelu_declaration

ALL_OPS = (_scaled_gelu_declaration.INTERFACE,)

scaled_gelu, ScaledGelu = _register(
    _scaled_gelu_declaration.INTERFACE,
)

try:
    __version__ = _version("my-cuda-op")
except _PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["ALL_OPS", "ScaledGelu", "scaled_gelu"]
