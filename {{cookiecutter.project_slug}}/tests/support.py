"""What the {{cookiecutter.op_name}} tests share: the generated options, tolerances and input helpers."""

from __future__ import annotations

import pytest
import torch

import {{cookiecutter.package_name}} as package
from {{cookiecutter.package_name}}._registration import backward as raw_backward  # noqa: F401
from {{cookiecutter.package_name}}.reference import {{cookiecutter.op_name}}_reference as reference  # noqa: F401

op = package.{{cookiecutter.op_name}}

# The answers this project was generated with.
KERNEL = "{{cookiecutter.kernel}}"
CPU_IMPL = {{cookiecutter.__cpu}}
DTYPES = [{{cookiecutter.__py_dtypes}}]
# torch.compile sees through a torch.library op; a pybind11 function is a graph break.
FULLGRAPH = {{cookiecutter.__fullgraph}}

ALL_FLOAT_DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
UNSUPPORTED_DTYPES = [torch.int32, torch.int64] + [d for d in ALL_FLOAT_DTYPES if d not in DTYPES]

requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
DEVICES = [pytest.param("cuda", marks=requires_cuda)] + (["cpu"] if CPU_IMPL else [])

SCALE = 0.75

# Allowed difference from the float64 reference rounded to the output dtype: the kernels compute in
# float32 (float64 for float64), so a couple of units in the last place of the output dtype.
TOLERANCES = {
    torch.float16: dict(rtol=2e-3, atol=2e-3),
    torch.bfloat16: dict(rtol=1.6e-2, atol=1.6e-2),
    torch.float32: dict(rtol=2e-5, atol=2e-5),
    torch.float64: dict(rtol=1e-10, atol=1e-12),
}


def random_input(shape, dtype, device, *, std: float = 3.0) -> torch.Tensor:
    """Fresh normal samples (never zeros, which hide unwritten outputs)."""
    return (torch.randn(shape, dtype=torch.float32, device=device) * std).to(dtype)


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
