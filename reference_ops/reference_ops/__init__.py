"""Fused LayerNorm and RMSNorm for PyTorch (CUDA and CPU), registered through torch.library.

import reference_ops
y = reference_ops.layer_norm(x, (hidden,), weight, bias)
norm = reference_ops.RMSNorm(hidden, device="cuda", dtype=torch.bfloat16)
y, h = reference_ops.add_rms_norm(x, residual, (hidden,), weight)  # h = x + residual
reference_ops.keep_kernels_when_compiled(True)  # compiled graphs call the kernels, not the math
"""

import torch  # noqa: F401  (loads libtorch, which _C links against)

from . import _C  # noqa: F401  (loads the library: registers the reference_ops:: ops)
from .functional import add_layer_norm, add_rms_norm, keep_kernels_when_compiled, layer_norm, rms_norm
from .modules import AddLayerNorm, AddRMSNorm, LayerNorm, RMSNorm

__all__ = [
    "add_layer_norm",
    "add_rms_norm",
    "keep_kernels_when_compiled",
    "layer_norm",
    "rms_norm",
    "AddLayerNorm",
    "AddRMSNorm",
    "LayerNorm",
    "RMSNorm",
]
