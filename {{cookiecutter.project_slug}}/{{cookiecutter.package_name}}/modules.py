"""nn.Module wrapper around {{cookiecutter.op_name}}."""

from __future__ import annotations

import torch

from . import ops as _ops


class {{cookiecutter.__class_name}}(torch.nn.Module):
    """Applies ``{{cookiecutter.__math}}``.

    See :func:`{{cookiecutter.package_name}}.{{cookiecutter.op_name}}`.
    """

    def __init__(self, scale: float = 1.0) -> None:
        super().__init__()
        self.scale = float(scale)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ops.{{cookiecutter.op_name}}(x, self.scale)

    def extra_repr(self) -> str:
        return f"scale={self.scale}"
