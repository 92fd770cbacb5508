"""The public {{cookiecutter.op_name}} function."""

from __future__ import annotations

import torch

try:  # the compiled extension (csrc/), which _registration connects to torch
    from . import _C  # noqa: F401
except ImportError as _error:  # not built, or built for another Python or torch: Python's own message misleads
    raise ImportError(
        "{{cookiecutter.package_name}}._C, the compiled extension, did not load. Build it for this Python and torch: "
        "pip install --no-build-isolation -e . (python doctor.py checks the tools); an extension built for "
        f"another Python or torch version must be rebuilt. ({_error})"
    ) from _error

from . import _registration


def {{cookiecutter.op_name}}(x: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
    """Return ``{{cookiecutter.__math}}``, computed by the custom kernel.

    Differentiable with respect to ``x``. Works on CUDA tensors (and CPU tensors when the
    project has a CPU kernel) of dtype {{cookiecutter.__dtypes}}; float16 and bfloat16 are
    computed in float32. Non-contiguous inputs are copied to contiguous memory first.

    Args:
        x: the input tensor.
        scale: a constant factor; no gradient flows to it.

    Returns:
        A new contiguous tensor with the shape, dtype and device of ``x``.

    Raises:
        RuntimeError: for an unsupported device or dtype, with what to do instead.
    """
    return _registration.forward(x, float(scale))
