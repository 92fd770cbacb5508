"""What the tests share: the generated options, and every op's inputs, scalars and reference, made
from its declaration ({{cookiecutter.package_name}}/ops/<op>.py). The generic tests run for every op in
{{cookiecutter.package_name}}.ALL_OPS; a new op needs no new test code to be covered by them."""

from __future__ import annotations

import pytest
import torch

import {{cookiecutter.package_name}} as package
from {{cookiecutter.package_name}}._registration import BACKWARDS

# The answers this project was generated with.
CPU_IMPL = {{cookiecutter.__cpu}}
DTYPES = [{{cookiecutter.__py_dtypes}}]
# torch.compile sees through a torch.library op; a pybind11 function is a graph break.
FULLGRAPH = {{cookiecutter.__fullgraph}}

ALL_FLOAT_DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
UNSUPPORTED_DTYPES = [torch.int32, torch.int64] + [d for d in ALL_FLOAT_DTYPES if d not in DTYPES]

requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
DEVICES = [pytest.param("cuda", marks=requires_cuda)] + (["cpu"] if CPU_IMPL else [])

OPS = {op.name: op for op in package.ALL_OPS}
OP_NAMES = list(OPS)


def function(op):
    return getattr(package, op.name)


def raw_backward(op):
    return BACKWARDS[op.name]


def scalars(op) -> dict:
    """The scalars the tests pass: each one's first example (a value other than its default), or its default."""
    return {s.name: (s.examples[0] if s.examples else s.default) for s in op.params}


def random_input(tensor, shape, dtype, device, *, generator=None) -> torch.Tensor:
    """Fresh samples of the input's declared domain (never zeros, which hide unwritten outputs)."""
    if tensor.domain is None:
        values = torch.randn(shape, generator=generator) * 3.0
    else:
        low, high = tensor.domain
        values = torch.rand(shape, generator=generator) * (high - low) + low
    return values.to(dtype=dtype, device=device)


def random_inputs(op, shape, dtype, device, *, generator=None) -> list[torch.Tensor]:
    """An input of each declared one: shaped like x, or (per_row) one value per row of x."""
    size = torch.Size(shape)
    return [random_input(t, op.input_shape(t, size), dtype, device, generator=generator) for t in op.inputs]


def output_shapes(op, shape) -> list[torch.Size]:
    return [op.output_shape(t, torch.Size(shape)) for t in op.outputs]


def as_tuple(result) -> tuple:
    return result if isinstance(result, tuple) else (result,)


def reference(op, inputs, params) -> tuple[torch.Tensor, ...]:
    """The op's declared reference, in float64, as a tuple of outputs."""
    return as_tuple(op.reference(*[t.double() for t in inputs], **params))


def grads_of(op, outputs, inputs, grad_outputs) -> tuple[torch.Tensor, ...]:
    """The gradients of the differentiable inputs."""
    wanted = [x for x, t in zip(inputs, op.inputs, strict=True) if t.grad]
    return torch.autograd.grad(outputs, wanted, grad_outputs)


def tolerance(op, dtype, direction, expected: torch.Tensor) -> dict:
    """The op's tolerance, its atol relative to the largest magnitude of the expected result."""
    bounds = dict(op.tolerances(dtype, direction))
    finite = expected[expected.isfinite()]
    bounds["atol"] *= max(1.0, finite.abs().max().item()) if finite.numel() else 1.0
    return bounds


def check_forward(op, inputs, params, *, equal_nan=False) -> tuple[torch.Tensor, ...]:
    """The op's outputs against its float64 reference, rounded to the inputs' dtype."""
    dtype = inputs[0].dtype
    outputs = as_tuple(function(op)(*inputs, **params))
    expected = reference(op, inputs, params)
    assert len(outputs) == len(expected) == len(op.outputs)
    for out, exp, t in zip(outputs, expected, op.outputs, strict=True):
        assert (out.dtype, out.device) == (dtype, inputs[0].device), t.name
        assert out.is_contiguous(), t.name
        torch.testing.assert_close(
            out, exp.to(dtype), equal_nan=equal_nan, **tolerance(op, dtype, "forward", exp), msg=t.name
        )
    return outputs


def check_backward(op, inputs, params, *, equal_nan=False) -> None:
    """The op's input gradients against its float64 reference's, for random output gradients."""
    dtype = inputs[0].dtype
    leaves = [x.detach().requires_grad_(t.grad) for x, t in zip(inputs, op.inputs, strict=True)]
    outputs = as_tuple(function(op)(*leaves, **params))
    grad_outputs = [torch.randn(o.shape, dtype=torch.float32, device=o.device).to(dtype) for o in outputs]
    grads = grads_of(op, outputs, leaves, grad_outputs)
    leaves64 = [x.detach().double().requires_grad_(t.grad) for x, t in zip(inputs, op.inputs, strict=True)]
    expected = grads_of(op, as_tuple(op.reference(*leaves64, **params)), leaves64, [g.double() for g in grad_outputs])
    shapes = {t.name: x.shape for t, x in zip(op.inputs, inputs, strict=True)}
    for grad, exp, t in zip(grads, expected, op.grad_inputs, strict=True):
        assert (grad.shape, grad.dtype) == (shapes[t.name], dtype), t.name
        torch.testing.assert_close(
            grad, exp.to(dtype), equal_nan=equal_nan, **tolerance(op, dtype, "backward", exp), msg=f"grad of {t.name}"
        )


def poison_allocator(shape, dtype, device) -> None:
    """Leave NaN-filled blocks of this size in the CUDA caching allocator.

    The next output of that size reuses one of them, so an element the kernel forgets to write
    reads NaN and fails the comparison instead of passing on stale data.
    """
    if torch.device(device).type == "cuda":
        blocks = [torch.full(shape, float("nan"), dtype=dtype, device=device) for _ in range(4)]
        del blocks


def shape_id(shape) -> str:
    return "x".join(map(str, shape))
