"""Registers the fake kernels of the scaled_gelu ops with torch.library.

The schema, the device kernels and the autograd formula are registered in C++
(csrc/_registration.cpp) when the extension loads; what tracing needs from Python is added here.
"""

from __future__ import annotations

import torch

from . import _C  # noqa: F401  (loading the library runs its TORCH_LIBRARY registrations)

_ops = torch.ops.cuop_my_cuda_op
_FORWARD = "cuop_my_cuda_op::scaled_gelu_fwd"
_BACKWARD = "cuop_my_cuda_op::scaled_gelu_bwd"


def forward(x: torch.Tensor, scale: float) -> torch.Tensor:
    return _ops.scaled_gelu_fwd.default(x, scale)


def backward(grad_out: torch.Tensor, saved: torch.Tensor, scale: float) -> torch.Tensor:
    return _ops.scaled_gelu_bwd.default(grad_out, saved, scale)


# Output metadata without running a kernel: lets torch.compile, FakeTensor and opcheck trace the op.
# The kernels always return a new contiguous tensor, so the fakes do too.
@torch.library.register_fake(_FORWARD)
def _(x: torch.Tensor, scale: float) -> torch.Tensor:
    return x.new_empty(x.shape)


@torch.library.register_fake(_BACKWARD)
def _(grad_out: torch.Tensor, saved: torch.Tensor, scale: float) -> torch.Tensor:
    return saved.new_empty(saved.shape)
