"""Public functions, fake (meta) implementations and autograd of the reference_ops ops.

The schema is declared once in csrc/norm.cpp; kernels live in csrc/*.cu (CUDA) and
csrc/norm.cpp (CPU).
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple, Union

import torch
from torch import Tensor

__all__ = ["layer_norm", "rms_norm"]

_ShapeLike = Union[int, Sequence[int], torch.Size]


def _as_shape(normalized_shape: _ShapeLike) -> List[int]:
    if isinstance(normalized_shape, int):
        return [normalized_shape]
    return [int(s) for s in normalized_shape]


def _wants_grad(*tensors: Optional[Tensor]) -> bool:
    """Whether autograd will need the forward's statistics (else the inference op runs: it
    writes no mean / rstd)."""
    return torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


def layer_norm(
    x: Tensor,
    normalized_shape: _ShapeLike,
    weight: Optional[Tensor] = None,
    bias: Optional[Tensor] = None,
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
        return torch.ops.reference_ops.layer_norm_fwd(x, shape, weight, bias, float(eps))[0]
    return torch.ops.reference_ops.layer_norm_inference(x, shape, weight, bias, float(eps))


def rms_norm(
    x: Tensor,
    normalized_shape: _ShapeLike,
    weight: Optional[Tensor] = None,
    eps: Optional[float] = None,
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
        return torch.ops.reference_ops.rms_norm_fwd(x, shape, weight, float(eps))[0]
    return torch.ops.reference_ops.rms_norm_inference(x, shape, weight, float(eps))


def _stat_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


def _stat_shape(x: Tensor, normalized_shape: Sequence[int]) -> Sequence[int]:
    return x.shape[: x.dim() - len(normalized_shape)]


def _grad_like(p: Optional[Tensor], x: Tensor) -> Tensor:
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


def _layer_norm_backward(ctx, dy, _dmean, _drstd) -> Tuple[Optional[Tensor], ...]:
    if dy is None:  # only mean / rstd were used: they carry no gradient
        return None, None, None, None, None
    x, mean, rstd, weight, bias = ctx.saved_tensors
    dx, dweight, dbias = torch.ops.reference_ops.layer_norm_bwd(
        dy, x, mean, rstd, ctx.normalized_shape, weight, bias
    )
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


def _rms_norm_backward(ctx, dy, _drstd) -> Tuple[Optional[Tensor], ...]:
    if dy is None:
        return None, None, None, None
    x, rstd, weight = ctx.saved_tensors
    dx, dweight = torch.ops.reference_ops.rms_norm_bwd(dy, x, rstd, ctx.normalized_shape, weight)
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
