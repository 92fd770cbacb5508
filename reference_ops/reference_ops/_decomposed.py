"""The ops' math in torch operations: what reference_ops' functions and modules run inside a graph
traced by torch.compile or torch.export.

An opaque op is a wall to inductor: it cannot fuse the norm with the residual add, the casts and the
matmul epilogues around it, and it calls the op through the dispatcher from its wrapper, a few
microseconds a call in host-bound steps. Given this math instead, inductor fuses it into kernels it
generates and launches itself, as it does with torch's own norms (whose eager kernels are fused CUDA
kernels too, and which inductor decomposes the same way). So: eager calls run the CUDA kernels,
compiled graphs get the math, and `reference_ops.keep_kernels_when_compiled(True)` keeps the kernels
in compiled graphs as well (measured in docs/reference_ops.md: that pays only in CUDA-graphed
training steps).

Same semantics as the kernels: statistics in float32 (float64 for float64), one rounding to the
output dtype, h = x + residual as torch adds them and y normalised from that h. The argument checks
mirror the kernels' (csrc/norm.cpp) and run once, while the graph is traced.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

_SUPPORTED = (torch.float32, torch.float16, torch.bfloat16, torch.float64)
_HALF = (torch.float16, torch.bfloat16)


def _require(ok: bool, message) -> None:
    """The kernels' TORCH_CHECK: a RuntimeError with message() when ok is false (shapes and dtypes
    are known while tracing, so this runs then, and never in the compiled graph)."""
    if not ok:
        raise RuntimeError(message())


def _check_param(op: str, name: str, x: Tensor, p: Tensor | None, shape: tuple[int, ...]) -> None:
    if p is None:
        return
    _require(
        p.device == x.device,
        lambda: f"{op}: {name} is on {p.device} but x is on {x.device}; move {name} to x's device "
        "(e.g. module.to(x.device))",
    )
    _require(
        tuple(p.shape) == shape,
        lambda: f"{op}: {name} must have shape normalized_shape = {list(shape)}, got {list(p.shape)}",
    )
    _require(
        p.dtype == x.dtype or (p.dtype == torch.float32 and x.dtype in _HALF),
        lambda: f"{op}: {name} has dtype {p.dtype} but x has dtype {x.dtype}; {name} must have x's dtype, or "
        "float32 when x is float16/bfloat16 (convert with .to(x.dtype))",
    )


def _check_norm(op: str, x: Tensor, normalized_shape: Sequence[int], weight, bias) -> tuple[int, ...]:
    _require(
        x.dtype in _SUPPORTED,
        lambda: f"{op}: x must be float32, float16, bfloat16 or float64, got {x.dtype}; "
        "convert it first (e.g. x.float())",
    )
    shape = tuple(normalized_shape)
    _require(len(shape) > 0, lambda: f"{op}: normalized_shape must name at least one trailing dimension of x, got []")
    _require(
        x.dim() >= len(shape) and tuple(x.shape[x.dim() - len(shape) :]) == shape,
        lambda: f"{op}: normalized_shape {list(shape)} must equal the trailing dimensions of x, got x of shape "
        f"{list(x.shape)}; pass normalized_shape = x.shape[-k:] for the k dimensions to normalise over",
    )
    _require(
        all(s > 0 for s in shape),
        lambda: f"{op}: normalized_shape {list(shape)} has no elements; every dimension must be >= 1",
    )
    _check_param(op, "weight", x, weight, shape)
    _check_param(op, "bias", x, bias, shape)
    _require(
        weight is None or bias is None or weight.dtype == bias.dtype,
        lambda: f"{op}: weight ({weight.dtype}) and bias ({bias.dtype}) must have the same dtype",
    )
    return tuple(range(-len(shape), 0))


def _normalise(x: Tensor, dims: tuple[int, ...], weight, bias, eps: float, rms: bool, out_dtype: torch.dtype) -> Tensor:
    acc = torch.float64 if x.dtype == torch.float64 else torch.float32
    xf = x.to(acc)
    if rms:
        y = xf * torch.rsqrt(xf.square().mean(dims, keepdim=True) + eps)
    else:
        var, mean = torch.var_mean(xf, dims, correction=0, keepdim=True)
        y = (xf - mean) * torch.rsqrt(var + eps)
    if weight is not None:
        y = y * weight.to(acc)
    if bias is not None:
        y = y + bias.to(acc)
    return y.to(out_dtype)


def layer_norm(x: Tensor, normalized_shape: Sequence[int], weight, bias, eps: float) -> Tensor:
    dims = _check_norm("layer_norm", x, normalized_shape, weight, bias)
    return _normalise(x, dims, weight, bias, eps, rms=False, out_dtype=x.dtype)


def rms_norm(x: Tensor, normalized_shape: Sequence[int], weight, eps: float) -> Tensor:
    dims = _check_norm("rms_norm", x, normalized_shape, weight, None)
    return _normalise(x, dims, weight, None, eps, rms=True, out_dtype=x.dtype)


def add_norm(
    op: str, x: Tensor, residual: Tensor, normalized_shape: Sequence[int], weight, bias, eps: float, out_dtype
) -> tuple[Tensor, Tensor]:
    """add_layer_norm (bias may be given) or add_rms_norm (op names it): (y, h), h = x + residual."""
    _require(
        residual.device == x.device,
        lambda: f"{op}: residual is on {residual.device} but x is on {x.device}; move both to one device",
    )
    _require(
        residual.shape == x.shape,
        lambda: f"{op}: residual must have x's shape {list(x.shape)}, got {list(residual.shape)} (broadcasting is "
        "not supported: expand and make it contiguous first)",
    )
    _require(
        residual.dtype == x.dtype or (residual.dtype == torch.float32 and x.dtype in _HALF),
        lambda: f"{op}: residual has dtype {residual.dtype} but x has dtype {x.dtype}; residual must have x's dtype, "
        "or float32 when x is float16/bfloat16 (a float32 residual stream)",
    )
    _require(
        out_dtype is None or out_dtype in (residual.dtype, x.dtype),
        lambda: f"{op}: out_dtype {out_dtype} is neither the residual's dtype ({residual.dtype}) nor x's "
        f"({x.dtype}); y comes in the residual stream's dtype, or in x's beside a float32 stream",
    )
    dims = _check_norm(op, residual, normalized_shape, weight, bias)
    h = x + residual
    y = _normalise(h, dims, weight, bias, eps, rms=op == "add_rms_norm", out_dtype=out_dtype or residual.dtype)
    return y, h
