"""Registers the fake (shape-only) kernels of the reference_ops ops with torch.library.

The same role as a generated project's <package>/_registration.py (the ops' registration with
torch.library), with less in it: here the schemas, the device kernels and the autograd kernels are
registered in C++ (csrc/_registration.cpp) when the extension loads, because the autograd kernels
are C++ (a Python register_autograd cost about 20 us a call, benchmarks/host_cost.py) and they
call the ops through the dispatcher; what tracing needs from Python, the fake kernels, is added
here. torch.compile and FakeTensor reach these fake kernels through the autograd kernels. The
public functions are in functional.py, the modules in modules.py.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from . import _C  # noqa: F401  (loading the library runs its TORCH_LIBRARY registrations)


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
@torch.library.register_fake("reference_ops::layer_norm")
def _layer_norm_fake(x, normalized_shape, weight, bias, eps):
    return torch.empty(x.shape, dtype=x.dtype, device=x.device)


@torch.library.register_fake("reference_ops::rms_norm")
def _rms_norm_fake(x, normalized_shape, weight, eps):
    return torch.empty(x.shape, dtype=x.dtype, device=x.device)


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


# The fused residual ops: h has the residual's dtype, y out_dtype (default: the residual's).
def _add_norm_outputs(residual: Tensor, out_dtype: torch.dtype | None) -> tuple[Tensor, Tensor]:
    return torch.empty_like(residual, dtype=out_dtype or residual.dtype), torch.empty_like(residual)


@torch.library.register_fake("reference_ops::add_layer_norm")
def _add_layer_norm_fake(x, residual, normalized_shape, weight, bias, eps, *, out_dtype=None):
    return _add_norm_outputs(residual, out_dtype)


@torch.library.register_fake("reference_ops::add_rms_norm")
def _add_rms_norm_fake(x, residual, normalized_shape, weight, eps, *, out_dtype=None):
    return _add_norm_outputs(residual, out_dtype)


@torch.library.register_fake("reference_ops::add_layer_norm_fwd")
def _add_layer_norm_fwd_fake(x, residual, normalized_shape, weight, bias, eps, *, out_dtype=None):
    stats = _stat_shape(residual, normalized_shape)
    mean = residual.new_empty(stats, dtype=_stat_dtype(residual.dtype))
    return *_add_norm_outputs(residual, out_dtype), mean, torch.empty_like(mean)


@torch.library.register_fake("reference_ops::add_rms_norm_fwd")
def _add_rms_norm_fwd_fake(x, residual, normalized_shape, weight, eps, *, out_dtype=None):
    rstd = residual.new_empty(_stat_shape(residual, normalized_shape), dtype=_stat_dtype(residual.dtype))
    return *_add_norm_outputs(residual, out_dtype), rstd


@torch.library.register_fake("reference_ops::add_norm_bwd")
def _add_norm_bwd_fake(dy, dh, h, mean, rstd, normalized_shape, weight, bias, x_dtype):
    dsum = torch.empty(h.shape, dtype=h.dtype, device=h.device)
    dx = h.new_empty(h.shape if x_dtype != h.dtype else (0,), dtype=x_dtype)
    return dsum, dx, _grad_like(weight, h), _grad_like(bias, h)
