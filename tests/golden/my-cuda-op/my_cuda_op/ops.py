"""The public scaled_gelu function."""

from __future__ import annotations

import torch

from . import _registration


def scaled_gelu(x: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
    """Return ``scale * gelu(x)``, computed by the custom kernel.

    Differentiable with respect to ``x``. Works on CUDA tensors (and CPU tensors when the
    project has a CPU kernel) of dtype float32, float16, bfloat16, float64; float16 and bfloat16 are
    computed in float32. Non-contiguous inputs are copied to contiguous memory first.

    Args:
        x: the input tensor.
        scale: a constant factor; no gradient flows to it.

    Returns:
        A new contiguous tensor with the shape, dtype and device of ``x``.

    Raises:
        RuntimeError: for an unsupported device or dtype, with what to do instead.
    """
    return _registration.forward(x, float(scale))
