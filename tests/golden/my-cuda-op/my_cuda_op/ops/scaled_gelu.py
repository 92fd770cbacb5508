"""scaled_gelu: y = scale * gelu(x), GELU in its tanh approximation, and its gradient.

The declaration below is the op's whole interface: the schemas, the Python function and module,
the tests and the benchmark are made from it. The kernels' math is in csrc/ops/scaled_gelu.h.
"""

from __future__ import annotations

import torch

from .._interface import Op, Scalar, Tensor


def reference(x: torch.Tensor, scale: float) -> torch.Tensor:
    """The op in plain PyTorch: the tests' float64 reference and the benchmark's baseline."""
    return scale * torch.nn.functional.gelu(x, approximate="tanh")


INTERFACE = Op(
    name="scaled_gelu",
    kind="elementwise",
    inputs=[Tensor("x")],
    outputs=[Tensor("y")],
    params=[Scalar("scale", 1.0, examples=(0.75, -1.5, 0.0, 3.0, 1e-3))],
    saves=["x"],
    reference=reference,
    math="scale * gelu(x)",
)
