"""The public layer_norm and rms_norm functions.

The ops are declared in csrc/registration.cpp; their fake kernels and autograd formulas are in
_registration.py. Without a gradient to compute, the *_inference ops run: they write no
statistics.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from . import _registration

__all__ = ["layer_norm", "rms_norm"]

_ShapeLike = int | Sequence[int] | torch.Size


def _as_shape(normalized_shape: _ShapeLike) -> list[int]:
    if isinstance(normalized_shape, int):
        return [normalized_shape]
    return [int(s) for s in normalized_shape]


def _wants_grad(*tensors: Tensor | None) -> bool:
    """Whether autograd will need the forward's statistics (else the inference op runs: it
    writes no mean / rstd)."""
    return torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


def layer_norm(
    x: Tensor,
    normalized_shape: _ShapeLike,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Layer normalisation over the trailing ``normalized_shape`` dimensions of ``x``.

    Same semantics as :func:`torch.nn.functional.layer_norm`: any leading dimensions,
    statistics accumulated in float32 (float64 for float64 input), output in ``x``'s dtype.
    ``weight`` / ``bias`` have shape ``normalized_shape`` and ``x``'s dtype, or float32
    when ``x`` is float16 / bfloat16.
    """
    shape = _as_shape(normalized_shape)
    if _wants_grad(x, weight, bias):
        return _registration.layer_norm_fwd(x, shape, weight, bias, float(eps))[0]
    return _registration.layer_norm_inference(x, shape, weight, bias, float(eps))


def rms_norm(
    x: Tensor,
    normalized_shape: _ShapeLike,
    weight: Tensor | None = None,
    eps: float | None = None,
) -> Tensor:
    """Root-mean-square normalisation over the trailing ``normalized_shape`` dimensions of ``x``.

    Same semantics as :func:`torch.nn.functional.rms_norm`: ``eps=None`` means
    ``torch.finfo(x.dtype).eps``. ``weight`` has shape ``normalized_shape`` and ``x``'s
    dtype, or float32 when ``x`` is float16 / bfloat16.
    """
    if eps is None:
        eps = torch.finfo(x.dtype).eps
    shape = _as_shape(normalized_shape)
    if _wants_grad(x, weight):
        return _registration.rms_norm_fwd(x, shape, weight, float(eps))[0]
    return _registration.rms_norm_inference(x, shape, weight, float(eps))
