"""scaled_gelu in plain PyTorch: the tests' float64 reference and the benchmark's baseline.

Keep it in step with csrc/scaled_gelu_math.h.
"""

from __future__ import annotations

import torch


def scaled_gelu_reference(x: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
    """``scale * gelu(x)`` with the tanh approximation of GELU."""
    return scale * torch.nn.functional.gelu(x, approximate="tanh")
