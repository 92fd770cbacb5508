"""nn.Module wrapper around scaled_gelu."""

from __future__ import annotations

import torch

from . import ops as _ops


class ScaledGelu(torch.nn.Module):
    """Applies ``scale * gelu(x)``.

    See :func:`my_cuda_op.scaled_gelu`.
    """

    def __init__(self, scale: float = 1.0) -> None:
        super().__init__()
        self.scale = float(scale)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ops.scaled_gelu(x, self.scale)

    def extra_repr(self) -> str:
        return f"scale={self.scale}"
