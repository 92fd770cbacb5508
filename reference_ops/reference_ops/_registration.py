"""Registers the reference_ops ops with torch.library: fake kernels and the autograd formulas.

The schema and the device kernels are registered in C++ (csrc/registration.cpp) when the
extension loads; what tracing and autograd need from Python is added here.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from . import _C  # noqa: F401  (loading the library runs its TORCH_LIBRARY registrations)

_ops = torch.ops.reference_ops


def layer_norm_fwd(
    x: Tensor, normalized_shape: list[int], weight: Tensor | None, bias: Tensor | None, eps: float
) -> tuple[Tensor, Tensor, Tensor]:
    return _ops.layer_norm_fwd.default(x, normalized_shape, weight, bias, eps)


def layer_norm_inference(
    x: Tensor, normalized_shape: list[int], weight: Tensor | None, bias: Tensor | None, eps: float
) -> Tensor:
    return _ops.layer_norm_inference.default(x, normalized_shape, weight, bias, eps)


def rms_norm_fwd(x: Tensor, normalized_shape: list[int], weight: Tensor | None, eps: float) -> tuple[Tensor, Tensor]:
    return _ops.rms_norm_fwd.default(x, normalized_shape, weight, eps)


def rms_norm_inference(x: Tensor, normalized_shape: list[int], weight: Tensor | None, eps: float) -> Tensor:
    return _ops.rms_norm_inference.default(x, normalized_shape, weight, eps)


def _stat_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


def _stat_shape(x: Tensor, normalized_shape: Sequence[int]) -> Sequence[int]:
    return x.shape[: x.dim() - len(normalized_shape)]


def _grad_like(p: Tensor | None, x: Tensor) -> Tensor:
    if p is None:
        return x.new_empty((0,))
    return torch.empty(p.shape, dtype=p.dtype, device=p.device)


# Fake implementations: shapes and dtypes only, so torch.compile and FakeTensor
# tracing can run the ops without touching data.
@torch.library.register_fake("reference_ops::layer_norm_fwd")
def _layer_norm_fwd_fake(x, normalized_shape, weight, bias, eps):
    stats = _stat_shape(x, normalized_shape)
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    mean = x.new_empty(stats, dtype=_stat_dtype(x.dtype))
    return y, mean, torch.empty_like(mean)


@torch.library.register_fake("reference_ops::layer_norm_bwd")
def _layer_norm_bwd_fake(dy, x, mean, rstd, normalized_shape, weight, bias):
    dx = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    return dx, _grad_like(weight, x), _grad_like(bias, x)


@torch.library.register_fake("reference_ops::rms_norm_fwd")
def _rms_norm_fwd_fake(x, normalized_shape, weight, eps):
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    return y, x.new_empty(_stat_shape(x, normalized_shape), dtype=_stat_dtype(x.dtype))


@torch.library.register_fake("reference_ops::layer_norm_inference")
def _layer_norm_inference_fake(x, normalized_shape, weight, bias, eps):
    return torch.empty(x.shape, dtype=x.dtype, device=x.device)


@torch.library.register_fake("reference_ops::rms_norm_inference")
def _rms_norm_inference_fake(x, normalized_shape, weight, eps):
    return torch.empty(x.shape, dtype=x.dtype, device=x.device)


@torch.library.register_fake("reference_ops::rms_norm_bwd")
def _rms_norm_bwd_fake(dy, x, rstd, normalized_shape, weight):
    dx = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    return dx, _grad_like(weight, x)


# Autograd: the forward saves x and the float statistics, and the backward calls
# the *_bwd custom op, so torch.compile traces both directions without a graph break.
def _layer_norm_setup_context(ctx, inputs, output):
    x, normalized_shape, weight, bias, _eps = inputs
    _y, mean, rstd = output
    # mean / rstd never receive gradients: no zero tensors (and fill kernels) for them.
    ctx.set_materialize_grads(False)
    ctx.normalized_shape = normalized_shape
    ctx.has_bias = bias is not None
    ctx.save_for_backward(x, mean, rstd, weight, bias)


def _layer_norm_backward(ctx, dy, _dmean, _drstd) -> tuple[Tensor | None, ...]:
    if dy is None:  # only mean / rstd were used: they carry no gradient
        return None, None, None, None, None
    x, mean, rstd, weight, bias = ctx.saved_tensors
    dx, dweight, dbias = _ops.layer_norm_bwd.default(dy, x, mean, rstd, ctx.normalized_shape, weight, bias)
    return (
        dx if ctx.needs_input_grad[0] else None,
        None,
        dweight if weight is not None and ctx.needs_input_grad[2] else None,
        dbias if ctx.has_bias and ctx.needs_input_grad[3] else None,
        None,
    )


def _rms_norm_setup_context(ctx, inputs, output):
    x, normalized_shape, weight, _eps = inputs
    _y, rstd = output
    ctx.set_materialize_grads(False)
    ctx.normalized_shape = normalized_shape
    ctx.save_for_backward(x, rstd, weight)


def _rms_norm_backward(ctx, dy, _drstd) -> tuple[Tensor | None, ...]:
    if dy is None:
        return None, None, None, None
    x, rstd, weight = ctx.saved_tensors
    dx, dweight = _ops.rms_norm_bwd.default(dy, x, rstd, ctx.normalized_shape, weight)
    return (
        dx if ctx.needs_input_grad[0] else None,
        None,
        dweight if weight is not None and ctx.needs_input_grad[2] else None,
        None,
    )


def _inference_backward(ctx, *grads):
    raise RuntimeError(
        "reference_ops: the *_inference ops save no statistics and have no backward; call "
        "reference_ops.layer_norm / rms_norm (or the *_fwd ops), which keep them when a gradient is wanted"
    )


torch.library.register_autograd("reference_ops::layer_norm_inference", _inference_backward)
torch.library.register_autograd("reference_ops::rms_norm_inference", _inference_backward)
torch.library.register_autograd(
    "reference_ops::layer_norm_fwd", _layer_norm_backward, setup_context=_layer_norm_setup_context
)
torch.library.register_autograd(
    "reference_ops::rms_norm_fwd", _rms_norm_backward, setup_context=_rms_norm_setup_context
)
