"""Drop-in replacements for torch.nn.LayerNorm and torch.nn.RMSNorm.

Same constructor arguments, parameters and state_dict keys ("weight", "bias"), so a
model can swap the class and load the same checkpoint. forward calls the op directly: the
shape is a tuple of ints from __init__, and autograd is decided in the op's C++ kernel. Inside a
graph that torch.compile traces it calls the function (reference_ops.functional), which gives the tracer
the ops' math unless keep_kernels_when_compiled(True).
"""

from __future__ import annotations

import numbers

import torch
from torch import Tensor, nn

from . import functional
from .functional import _DEFAULT_EPS, _add_layer_norm_op, _add_rms_norm_op, _layer_norm_op, _rms_norm_op, _tracing

__all__ = ["AddLayerNorm", "AddRMSNorm", "LayerNorm", "RMSNorm"]

_ShapeT = int | list[int] | tuple[int, ...] | torch.Size


def _as_tuple(normalized_shape: _ShapeT) -> tuple[int, ...]:
    if isinstance(normalized_shape, numbers.Integral):
        return (int(normalized_shape),)
    return tuple(int(s) for s in normalized_shape)


class LayerNorm(nn.Module):
    """:class:`torch.nn.LayerNorm` computed by ``reference_ops.layer_norm``."""

    __constants__ = ["normalized_shape", "eps", "elementwise_affine"]
    normalized_shape: tuple[int, ...]
    eps: float
    elementwise_affine: bool

    def __init__(
        self,
        normalized_shape: _ShapeT,
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.normalized_shape = _as_tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = nn.Parameter(torch.empty(self.normalized_shape, **factory))
            if bias:
                self.bias = nn.Parameter(torch.empty(self.normalized_shape, **factory))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.elementwise_affine:
            nn.init.ones_(self.weight)
            if self.bias is not None:
                nn.init.zeros_(self.bias)

    def forward(self, x: Tensor) -> Tensor:
        if _tracing():
            return functional.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        return _layer_norm_op(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return "{normalized_shape}, eps={eps}, elementwise_affine={elementwise_affine}".format(**self.__dict__)


class RMSNorm(nn.Module):
    """:class:`torch.nn.RMSNorm` computed by ``reference_ops.rms_norm``."""

    __constants__ = ["normalized_shape", "eps", "elementwise_affine"]
    normalized_shape: tuple[int, ...]
    eps: float | None
    elementwise_affine: bool

    def __init__(
        self,
        normalized_shape: _ShapeT,
        eps: float | None = None,
        elementwise_affine: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.normalized_shape = _as_tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = nn.Parameter(torch.empty(self.normalized_shape, **factory))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.elementwise_affine:
            nn.init.ones_(self.weight)

    def forward(self, x: Tensor) -> Tensor:
        if _tracing():
            return functional.rms_norm(x, self.normalized_shape, self.weight, self.eps)
        eps = self.eps
        if eps is None:
            eps = _DEFAULT_EPS.get(x.dtype, 0.0)
        return _rms_norm_op(x, self.normalized_shape, self.weight, eps)

    def extra_repr(self) -> str:
        return "{normalized_shape}, eps={eps}, elementwise_affine={elementwise_affine}".format(**self.__dict__)


def _y_dtype(x: Tensor, residual: Tensor) -> torch.dtype | None:
    """The fused modules' y dtype: x's (the autocast dtype) beside a float32 stream under autocast."""
    if x.dtype != residual.dtype and torch.is_autocast_enabled(x.device.type):
        return x.dtype
    return None


class AddLayerNorm(LayerNorm):
    """The residual add and :class:`LayerNorm` of a pre-norm block, fused: ``forward(x, residual)``
    returns ``(layer_norm(x + residual), x + residual)`` (``reference_ops.add_layer_norm``);
    ``forward(x)`` returns ``(layer_norm(x), x)`` (a model's first block, with no residual yet).

    Parameters and state_dict as :class:`torch.nn.LayerNorm`, so a block's norm is swapped without
    touching its checkpoint. Under autocast, beside a float32 residual stream, ``y`` comes in ``x``'s
    (the autocast) dtype: it is the next sublayer's input, which autocast would cast to that dtype;
    ``h`` stays float32.
    """

    fused_residual = True

    def forward(self, x: Tensor, residual: Tensor | None = None) -> tuple[Tensor, Tensor]:  # type: ignore[override]
        if residual is None:  # the first block: nothing to add yet
            return super().forward(x), x
        if _tracing():
            return functional.add_layer_norm(
                x, residual, self.normalized_shape, self.weight, self.bias, self.eps, out_dtype=_y_dtype(x, residual)
            )
        return _add_layer_norm_op(
            x, residual, self.normalized_shape, self.weight, self.bias, self.eps, out_dtype=_y_dtype(x, residual)
        )


class AddRMSNorm(RMSNorm):
    """The residual add and :class:`RMSNorm` of a pre-norm block, fused: ``forward(x, residual)``
    returns ``(rms_norm(x + residual), x + residual)`` (``reference_ops.add_rms_norm``); ``y``'s
    dtype as in :class:`AddLayerNorm`."""

    fused_residual = True

    def forward(self, x: Tensor, residual: Tensor | None = None) -> tuple[Tensor, Tensor]:  # type: ignore[override]
        if residual is None:  # the first block: nothing to add yet
            return super().forward(x), x
        if _tracing():
            return functional.add_rms_norm(
                x, residual, self.normalized_shape, self.weight, self.eps, out_dtype=_y_dtype(x, residual)
            )
        eps = self.eps
        if eps is None:
            eps = _DEFAULT_EPS.get(residual.dtype, 0.0)
        return _add_rms_norm_op(x, residual, self.normalized_shape, self.weight, eps, out_dtype=_y_dtype(x, residual))
