"""Fused LayerNorm and RMSNorm for PyTorch (CUDA and CPU), registered through torch.library.

    import reference_ops
    y = reference_ops.layer_norm(x, (hidden,), weight, bias)
    norm = reference_ops.RMSNorm(hidden, device="cuda", dtype=torch.bfloat16)
"""

import torch  # noqa: F401  (loads libtorch, which _C links against)

from . import _C  # noqa: F401  (loads the library: registers the reference_ops:: ops)
from .modules import LayerNorm, RMSNorm
from .ops import layer_norm, rms_norm

__all__ = ["layer_norm", "rms_norm", "LayerNorm", "RMSNorm"]
