"""The public functions: layer_norm, rms_norm, add_layer_norm, add_rms_norm.

Named as torch.nn.functional, whose functions these stand in for. (In a generated project the
public functions are made by <package>/_registration.py from each op's declaration, and
<package>/ops/ holds those declarations; here the ops are declared in C++ and the functions are
written by hand, so neither role has a file of that name.)

Each is one call of its op (declared in csrc/_registration.cpp): the op's autograd kernel, in C++,
decides whether autograd will want a gradient and runs the *_fwd op (which keeps the statistics
for the backward) or the *_inference op (which writes none). Nothing else happens here per call
but the conversion of an int normalized_shape and, for rms_norm, the default eps.

Inside a graph that torch.compile or torch.export traces, the functions (and the modules) give the
tracer the ops' math instead (_decomposed.py), which inductor fuses with its neighbours; see
keep_kernels_when_compiled. `torch.ops.reference_ops.*` are always the kernels.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from . import _decomposed, _registration  # noqa: F401  (_registration: the fake kernels, for torch.compile)

__all__ = ["add_layer_norm", "add_rms_norm", "keep_kernels_when_compiled", "layer_norm", "rms_norm"]

_ShapeLike = int | Sequence[int] | torch.Size

# The ops' overloads, looked up once; calling them is the whole per-call cost of the functions.
_layer_norm_op = torch.ops.reference_ops.layer_norm.default
_rms_norm_op = torch.ops.reference_ops.rms_norm.default
_add_layer_norm_op = torch.ops.reference_ops.add_layer_norm.default
_add_rms_norm_op = torch.ops.reference_ops.add_rms_norm.default

# rms_norm's eps=None: torch.finfo(dtype).eps, looked up in a dict (torch.finfo builds an object per
# call). Other dtypes get 0.0 here and the op's clear dtype error.
_DEFAULT_EPS = {t: torch.finfo(t).eps for t in (torch.float32, torch.float16, torch.bfloat16, torch.float64)}

# True while torch.compile / torch.export traces (a constant there); eagerly one call of ~50 ns.
_tracing = torch.compiler.is_compiling
_keep_kernels = False


def keep_kernels_when_compiled(enabled: bool = True) -> None:
    """Whether graphs traced by torch.compile / torch.export call the ops' kernels (True) or get the
    ops' math, which inductor fuses with the operations around it (False, the default).

    The math is the faster choice in most compiled models: inductor fuses the norm with the residual
    add and the casts beside it and launches the result from its own wrapper, where an opaque op is
    called through the dispatcher. Keep the kernels where a step runs in CUDA graphs and is
    GPU-bound (``mode="reduce-overhead"`` training with the fused modules: docs/reference_ops.md has
    the figures). Read when a graph is traced: changing it recompiles.
    """
    global _keep_kernels
    _keep_kernels = bool(enabled)


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
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    if _tracing() and not _keep_kernels:
        return _decomposed.layer_norm(x, normalized_shape, weight, bias, eps)
    return _layer_norm_op(x, normalized_shape, weight, bias, eps)


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
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    if eps is None:
        eps = _DEFAULT_EPS.get(x.dtype, 0.0)
    if _tracing() and not _keep_kernels:
        return _decomposed.rms_norm(x, normalized_shape, weight, eps)
    return _rms_norm_op(x, normalized_shape, weight, eps)


def add_layer_norm(
    x: Tensor,
    residual: Tensor,
    normalized_shape: _ShapeLike,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
    *,
    out_dtype: torch.dtype | None = None,
) -> tuple[Tensor, Tensor]:
    """``h = x + residual`` and ``y = layer_norm(h)`` in one pass; returns ``(y, h)``.

    The pre-norm transformer block's step: ``h`` is the new residual stream, ``y`` the next
    sublayer's input. ``residual`` has ``x``'s shape and dtype, or float32 when ``x`` is
    float16 / bfloat16 (a float32 residual stream, as under autocast); ``h`` has the residual's
    dtype, and so has ``y`` unless ``out_dtype`` is given: ``x``'s dtype beside a float32 stream,
    the dtype the next sublayer computes in (under autocast its matmul would cast a float32 ``y``
    to it: one more kernel, and y written and read at twice the bytes). ``weight`` / ``bias`` as
    for :func:`layer_norm`, against the residual's dtype.
    """
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    if _tracing() and not _keep_kernels:
        return _decomposed.add_norm("add_layer_norm", x, residual, normalized_shape, weight, bias, eps, out_dtype)
    return _add_layer_norm_op(x, residual, normalized_shape, weight, bias, eps, out_dtype=out_dtype)


def add_rms_norm(
    x: Tensor,
    residual: Tensor,
    normalized_shape: _ShapeLike,
    weight: Tensor | None = None,
    eps: float | None = None,
    *,
    out_dtype: torch.dtype | None = None,
) -> tuple[Tensor, Tensor]:
    """``h = x + residual`` and ``y = rms_norm(h)`` in one pass; returns ``(y, h)``.

    As :func:`add_layer_norm`; ``eps=None`` means ``torch.finfo(residual.dtype).eps``.
    """
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    if eps is None:
        eps = _DEFAULT_EPS.get(residual.dtype, 0.0)
    if _tracing() and not _keep_kernels:
        return _decomposed.add_norm("add_rms_norm", x, residual, normalized_shape, weight, None, eps, out_dtype)
    return _add_rms_norm_op(x, residual, normalized_shape, weight, eps, out_dtype=out_dtype)
