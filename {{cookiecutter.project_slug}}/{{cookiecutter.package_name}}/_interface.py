"""How an op of this package is declared, and what follows from the declaration.

An op's file in ``ops/`` declares it once (:class:`Op`): its tensors, its scalar parameters with
their defaults and valid ranges, which tensors its backward reads, and its float64 reference.
The schemas, the fake kernels, the autograd wiring, the public function and module, the generic
tests and the benchmark are all made from that declaration; the C++ side reads the schemas.
"""

from __future__ import annotations

import keyword
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

KINDS = ("elementwise", "rowwise")


@dataclass(frozen=True)
class Tensor:
    """An input or output tensor of an op.

    Args:
        name: its name in the schema, the function's signature and messages.
        grad: (inputs) whether the op is differentiable with respect to it.
        domain: (inputs) the values the tests and the benchmark draw, ``(low, high)``, uniformly;
            ``None``: normal samples of standard deviation 3, positive and negative.
        per_row: (rowwise ops) one value per row, shape ``x.shape[:-1]``: an output such as a row's
            log-sum-exp, or an input such as a per-row scale. They come after the tensors shaped
            like x, in the declaration and in the functors (csrc/engine/rowwise.cuh).
    """

    name: str
    grad: bool = True
    domain: tuple[float, float] | None = None
    per_row: bool = False


@dataclass(frozen=True)
class Scalar:
    """A scalar parameter: a Python float, int or bool, passed to the kernels' functors.

    Args:
        name: its name in the schema and the function's signature.
        default: its value when the caller leaves it out; its type is the parameter's type.
        low, high: the valid range, inclusive (``None``: unbounded); the function refuses others.
        nonzero: whether 0 is refused.
        examples: values the property tests draw besides the default (within the range).
    """

    name: str
    default: float | int | bool
    low: float | None = None
    high: float | None = None
    nonzero: bool = False
    examples: tuple[float | int | bool, ...] = ()

    @property
    def type(self) -> type:
        return type(self.default)

    @property
    def schema_type(self) -> str:
        return {bool: "bool", int: "int", float: "float"}[self.type]

    def valid(self, value) -> bool:
        return (
            (self.low is None or value >= self.low)
            and (self.high is None or value <= self.high)
            and not (self.nonzero and value == 0)
        )

    def describe_range(self) -> str:
        parts = []
        if self.low is not None:
            parts.append(f">= {self.low}")
        if self.high is not None:
            parts.append(f"<= {self.high}")
        if self.nonzero:
            parts.append("nonzero")
        return " and ".join(parts) or "any value"


def _tolerance(dtype: torch.dtype, direction: str) -> dict:
    """Allowed difference from the float64 reference rounded to the output dtype.

    The kernels compute in float32 (float64 for float64), so a couple of units in the last place of
    the output dtype; the backward gets twice as much (its math has more steps).
    """
    base = {
        torch.float16: (2e-3, 2e-3),
        torch.bfloat16: (1.6e-2, 1.6e-2),
        torch.float32: (2e-5, 2e-5),
        torch.float64: (1e-10, 1e-12),
    }[dtype]
    factor = 2 if direction == "backward" else 1
    return {"rtol": base[0] * factor, "atol": base[1] * factor}


@dataclass(frozen=True)
class Op:
    """An op: the one place its interface is written down.

    Args:
        name: the op's name (a lower_snake_case identifier): the Python function, and in the
            schemas ``<name>_fwd`` / ``<name>_bwd``.
        kind: ``"elementwise"`` (every tensor of one shape) or ``"rowwise"`` (reduces over the
            last dimension).
        inputs: 1 to 3 input tensors.
        outputs: 1 or 2 output tensors.
        params: the scalar parameters; the functors' fields, in this order.
        saves: the names of the inputs and outputs the backward reads; the backward's functor takes
            the outputs' gradients first, then these, in this order.
        reference: the op in plain PyTorch, same arguments, returning one tensor per output (a
            tuple for two); the tests call it in float64, the benchmark in the input dtype.
        math: one line for docstrings, e.g. ``"scale * gelu(x)"``.
        tolerance: ``(dtype, "forward" | "backward") -> dict(rtol=..., atol=...)`` for an op whose
            results need other tolerances than the default's (ill-conditioned math); ``None``
            keeps the default.
    """

    name: str
    kind: str
    inputs: Sequence[Tensor]
    outputs: Sequence[Tensor]
    params: Sequence[Scalar]
    saves: Sequence[str]
    reference: Callable
    math: str
    tolerance: Callable[[torch.dtype, str], dict] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "outputs", tuple(self.outputs))
        object.__setattr__(self, "params", tuple(self.params))
        object.__setattr__(self, "saves", tuple(self.saves))
        where = f"op {self.name!r}"
        names = [t.name for t in self.inputs + self.outputs] + [s.name for s in self.params]
        for name in [self.name, *names]:
            if not name.isidentifier() or keyword.iskeyword(name) or name != name.lower():
                raise ValueError(f"{where}: {name!r} is not a lower_snake_case identifier; rename it")
        if len(set(names)) != len(names):
            raise ValueError(f"{where}: the names {names} repeat one; give every tensor and scalar its own")
        if self.kind not in KINDS:
            raise ValueError(f"{where}: kind {self.kind!r} is not one of {KINDS}")
        if not 1 <= len(self.inputs) <= 3 or not 1 <= len(self.outputs) <= 2:
            raise ValueError(f"{where}: an op takes 1 to 3 inputs and gives 1 or 2 outputs")
        if not any(t.grad for t in self.inputs):
            raise ValueError(f"{where}: no input has grad=True; at least one must be differentiable")
        if any(t.per_row for t in self.inputs + self.outputs) and self.kind != "rowwise":
            raise ValueError(f"{where}: per_row tensors need kind='rowwise'")
        for group in (self.inputs, self.outputs):
            flags = [t.per_row for t in group]
            if flags != sorted(flags):
                raise ValueError(
                    f"{where}: per_row tensors come after those shaped like x; reorder {[t.name for t in group]}"
                )
        if self.inputs[0].per_row:
            raise ValueError(f"{where}: the first input is shaped like x, not per_row")
        for name in self.saves:
            if name not in [t.name for t in self.inputs + self.outputs]:
                raise ValueError(f"{where}: saves {name!r}, which is neither an input nor an output")
        for s in self.params:
            if not isinstance(s.default, bool | int | float):
                raise ValueError(f"{where}: {s.name}'s default must be a float, int or bool")
            for value in (s.default, *s.examples):
                if not s.valid(value):
                    raise ValueError(f"{where}: {s.name}={value!r} is outside its range ({s.describe_range()})")

    @property
    def class_name(self) -> str:
        return "".join(part.title() for part in self.name.split("_"))

    @property
    def grad_inputs(self) -> tuple[Tensor, ...]:
        return tuple(t for t in self.inputs if t.grad)

    def saved(self) -> tuple[Tensor, ...]:
        by_name = {t.name: t for t in self.inputs + self.outputs}
        return tuple(by_name[name] for name in self.saves)

    def _scalars(self, defaults: bool) -> list[str]:
        return [f"{s.schema_type} {s.name}" + (f"={s.default!r}" if defaults else "") for s in self.params]

    def forward_schema(self) -> str:
        args = [f"Tensor {t.name}" for t in self.inputs] + self._scalars(defaults=True)
        returns = ", ".join(f"Tensor {t.name}" for t in self.outputs)
        return f"{self.name}_fwd({', '.join(args)}) -> ({returns})"

    def backward_schema(self) -> str:
        args = [f"Tensor grad_{t.name}" for t in self.outputs] + [f"Tensor {t.name}" for t in self.saved()]
        args += self._scalars(defaults=False)
        returns = ", ".join(f"Tensor grad_{t.name}" for t in self.grad_inputs)
        return f"{self.name}_bwd({', '.join(args)}) -> ({returns})"

    def tolerances(self, dtype: torch.dtype, direction: str) -> dict:
        """The tests' tolerance for a result of this dtype and direction."""
        custom = self.tolerance(dtype, direction) if self.tolerance is not None else None
        return custom if custom is not None else _tolerance(dtype, direction)

    def output_shape(self, output: Tensor, x_shape: torch.Size) -> torch.Size:
        """The shape of a tensor of the op (an output, or an input) for a first input of x_shape."""
        return x_shape[:-1] if output.per_row else x_shape

    input_shape = output_shape

    def bytes_moved(self, numel: int, rows: int, element_size: int, direction: str) -> int:
        """The fewest bytes a call must move: every tensor read and written once."""
        if direction == "forward":
            moved = self.inputs + self.outputs
        else:  # a gradient per output, shaped like it; the saved tensors; a gradient per differentiable input
            moved = self.outputs + self.saved() + self.grad_inputs
        per_row = sum(t.per_row for t in moved)
        return ((len(moved) - per_row) * numel + per_row * rows) * element_size

    def signature_text(self) -> str:
        """The public function's parameters, as Python source."""
        return ", ".join([t.name for t in self.inputs] + [f"{s.name}={s.default!r}" for s in self.params])
