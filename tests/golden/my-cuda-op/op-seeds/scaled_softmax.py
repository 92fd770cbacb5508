"""scaled_softmax: y = softmax(scale * x) over the last dimension, and its gradient.

The declaration below is the op's whole interface: the schemas, the Python function and module,
the tests and the benchmark are made from it. The kernels' math is in csrc/ops/scaled_softmax.h.
"""

from __future__ import annotations

import torch

from .._interface import Op, Scalar, Tensor


def reference(x: torch.Tensor, scale: float) -> torch.Tensor:
    """The op in plain PyTorch: the tests' float64 reference and the benchmark's baseline."""
    return torch.softmax(scale * x, dim=-1)


INTERFACE = Op(
    name="scaled_softmax",
    kind="rowwise",
    inputs=[Tensor("x")],
    outputs=[Tensor("y")],
    params=[Scalar("scale", 1.0, examples=(0.75, -1.5, 0.0, 3.0, 1e-3))],
    saves=["y"],  # the backward reads the output, dx = scale * y * (dy - sum(dy * y)), not x
    reference=reference,
    math="softmax(scale * x, dim=-1)",
)
