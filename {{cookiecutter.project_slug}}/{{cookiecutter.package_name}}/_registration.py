"""Connects each declared op (ops/) to torch and makes its public function and module.

{%- if cookiecutter.__stable == 'True' %}
The schemas ``<op>_fwd`` / ``<op>_bwd`` are defined here from the declaration, with fake
(shape-only) kernels for torch.compile, FakeTensor and opcheck, and the forward's autograd formula
(the LibTorch stable ABI, which the extension is built against, has no C++ autograd); the device
kernels are registered in C++ (csrc/op.cpp) when the extension loads, and read the schemas
handed to them here.
{%- elif cookiecutter.registration == 'torch_library' %}
The schemas ``<op>_fwd`` / ``<op>_bwd`` are defined here from the declaration, with fake
(shape-only) kernels for torch.compile, FakeTensor and opcheck; the device kernels and the forward's
autograd kernel are registered in C++ (csrc/op.cpp) when the extension loads.
{%- else %}
The pybind11 module runs an op by name (``_C.call``); here a torch.autograd.Function made from the
declaration records it for autograd. torch.compile cannot see inside a pybind11 function, so it
runs the op eagerly between compiled graphs (a graph break); generate the project with
registration=torch_library for one graph.
{%- endif %}
"""

from __future__ import annotations

import torch

try:  # the compiled extension (csrc/); loading it registers the kernels
    from . import _C  # noqa: F401
except ImportError as _error:  # not built, or built for another Python or torch: Python's own message misleads
    raise ImportError(
        "{{cookiecutter.package_name}}._C, the compiled extension, did not load. Build it for this Python and torch: "
        "pip install --no-build-isolation -e . (python doctor.py checks the tools); an extension built for "
        f"another Python or torch version must be rebuilt. ({_error})"
    ) from _error

from ._interface import Op

NAMESPACE = "{{cookiecutter.__ns}}"
{%- if cookiecutter.registration == 'torch_library' %}
_LIBRARY = torch.library.Library(NAMESPACE, "FRAGMENT")
{%- endif %}


def _fakes(op: Op):
    """The forward's and the backward's outputs, metadata only: new contiguous tensors, as the kernels return."""

    def forward(*args):
        x = args[0]
        outputs = [x.new_empty(op.output_shape(t, x.shape)) for t in op.outputs]
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def backward(*args):
        # The backward's tensors: a gradient per output, then the saved ones. A gradient of an input
        # has that input's shape, which every tensor of x's shape among them shares.
        tensors = [t for t in args if isinstance(t, torch.Tensor)]
        described = list(op.outputs) + list(op.saved())
        full = next(t for t, d in zip(tensors, described, strict=True) if not d.per_row)
        grads = [full.new_empty(op.input_shape(t, full.shape)) for t in op.grad_inputs]
        return grads[0] if len(grads) == 1 else tuple(grads)

    return forward, backward


def _split(op: Op, args: tuple) -> tuple[list[torch.Tensor], list]:
    n = len(op.inputs)
    return list(args[:n]), list(args[n:])
{%- if cookiecutter.registration == 'pybind11' or cookiecutter.__stable == 'True' %}


def _saves(op: Op):
    """saved(inputs, outputs): the tensors the backward reads, in the declaration's order."""
    where = {t.name: (0, i) for i, t in enumerate(op.inputs)} | {t.name: (1, i) for i, t in enumerate(op.outputs)}
    picks = [where[name] for name in op.saves]
    return lambda inputs, outputs: [(inputs, outputs)[side][index] for side, index in picks]


def _input_grads(op: Op):
    """grads(result): the backward's outputs placed at the forward's inputs (None for the rest)."""
    grad_of = [i for i, t in enumerate(op.inputs) if t.grad]
    count = len(op.inputs) + len(op.params)

    def grads(result) -> tuple:
        out = [None] * count
        for index, grad in zip(grad_of, (result,) if isinstance(result, torch.Tensor) else result, strict=True):
            out[index] = grad
        return tuple(out)

    return grads
{%- endif %}
{%- if cookiecutter.registration == 'torch_library' %}


def _kernels(op: Op):
    """Defines the op's schemas and fake kernels; returns the forward's and the backward's op."""
    _LIBRARY.define(op.forward_schema())
    _LIBRARY.define(op.backward_schema())
{%- if cookiecutter.__stable == 'True' %}
    _C.declare(f"{NAMESPACE}::{op.forward_schema()}", f"{NAMESPACE}::{op.backward_schema()}")
{%- endif %}
    fake_forward, fake_backward = _fakes(op)
    torch.library.register_fake(f"{NAMESPACE}::{op.name}_fwd", fake_forward, lib=_LIBRARY)
    torch.library.register_fake(f"{NAMESPACE}::{op.name}_bwd", fake_backward, lib=_LIBRARY)
    ops = getattr(torch.ops, NAMESPACE)
{%- if cookiecutter.__stable == 'True' %}
    forward, backward = getattr(ops, f"{op.name}_fwd").default, getattr(ops, f"{op.name}_bwd").default
    _autograd(op, backward)
    return forward, backward


def _autograd(op: Op, backward_op) -> None:
    """The forward's autograd formula: it saves what the backward reads and calls the backward op,
    which torch.compile then traces beside the forward. The backward op has none: a second
    derivative is not supported."""
    saved_of, grads_of = _saves(op), _input_grads(op)
    single = len(op.outputs) == 1

    def setup_context(ctx, inputs, output):
        tensors, scalars = _split(op, inputs)
        ctx.save_for_backward(*saved_of(tensors, (output,) if single else output))
        ctx.scalars = scalars

    def backward(ctx, *grads):
        return grads_of(backward_op(*grads, *ctx.saved_tensors, *ctx.scalars))

    torch.library.register_autograd(f"{NAMESPACE}::{op.name}_fwd", backward, setup_context=setup_context, lib=_LIBRARY)
{%- else %}
    return getattr(ops, f"{op.name}_fwd").default, getattr(ops, f"{op.name}_bwd").default
{%- endif %}
{%- else %}


def _kernels(op: Op):
    """Declares the op's schemas to the extension; returns the forward (with autograd) and the backward."""
    _C.declare(f"{NAMESPACE}::{op.forward_schema()}", f"{NAMESPACE}::{op.backward_schema()}")
    forward_name, backward_name = f"{op.name}_fwd", f"{op.name}_bwd"
    n_inputs, n_outputs = len(op.inputs), len(op.outputs)
    saved_of, grads_of = _saves(op), _input_grads(op)

    def raw_forward(*args):
        tensors, scalars = _split(op, args)
        outputs = _C.call(forward_name, tensors, [float(s) for s in scalars])
        return outputs[0] if n_outputs == 1 else tuple(outputs)

    def raw_backward(*args):
        tensors, scalars = args[: n_outputs + len(op.saves)], args[n_outputs + len(op.saves) :]
        grads = _C.call(backward_name, list(tensors), [float(s) for s in scalars])
        return grads[0] if len(grads) == 1 else tuple(grads)

    # forward takes ctx itself, with no separate setup_context: with one, every apply binds its
    # arguments through inspect.signature, Python time on every call.
    class Function(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *args):
            tensors, scalars = _split(op, args)
            outputs = _C.call(forward_name, tensors, [float(s) for s in scalars])
            ctx.save_for_backward(*saved_of(tensors, outputs))
            ctx.scalars = scalars
            return outputs[0] if n_outputs == 1 else tuple(outputs)

        @staticmethod
        def backward(ctx, *grads):
            return grads_of(raw_backward(*grads, *ctx.saved_tensors, *ctx.scalars))

    Function.__name__ = f"{op.class_name}Function"

    def forward(*args):
        # Where autograd records nothing (no_grad, inference_mode, no input that needs a gradient),
        # call the kernel directly: apply costs Python time a call even then.
        if torch.is_grad_enabled() and any(getattr(t, "requires_grad", False) for t in args[:n_inputs]):
            return Function.apply(*args)
        return raw_forward(*args)

    return forward, raw_backward
{%- endif %}


def _function(op: Op, forward):
    """The public function, with the declared signature; it refuses scalars outside their range."""
    lines = [f"def {op.name}({op.signature_text()}):"]
    for s in op.params:
        lines.append(f"    {s.name} = {s.type.__name__}({s.name})")
        if s.describe_range() != "any value":
            lines.append(f"    if not _params[{s.name!r}].valid({s.name}):")
            lines.append(f"        raise _out_of_range({s.name!r}, {s.name})")
    call = ", ".join([t.name for t in op.inputs] + [s.name for s in op.params])
    lines.append(f"    return _forward({call})")
    params = {s.name: s for s in op.params}

    def out_of_range(name, value) -> ValueError:
        valid = params[name].describe_range()
        return ValueError(f"{op.name}: {name}={value!r} is outside its range ({valid}); pass a value in it")

    namespace = {"_forward": forward, "_params": params, "_out_of_range": out_of_range}
    exec("\n".join(lines), namespace)  # noqa: S102 - the source is made from the declaration above
    function = namespace[op.name]
    inputs = ", ".join(t.name for t in op.inputs)
    outputs = ", ".join(t.name for t in op.outputs)
    described = "".join(
        f"\n        {s.name}: {s.type.__name__}, default {s.default!r} ({s.describe_range()})." for s in op.params
    )
    function.__doc__ = f"""Return ``{op.math}``, computed by the custom kernels.

    Differentiable with respect to {", ".join(t.name for t in op.grad_inputs)}. Works on CUDA tensors
    (and CPU tensors when the project has CPU kernels) of dtype {{cookiecutter.__dtypes}}; float16
    and bfloat16 are computed in float32. Non-contiguous inputs are copied to contiguous memory first.

    Args:
        {inputs}: the input tensors, of one dtype and device.{described}

    Returns:
        {outputs}: new contiguous tensors of the inputs' dtype and device.

    Raises:
        RuntimeError: for an unsupported device, dtype or shape, with what to do instead.
        ValueError: for a scalar outside its range.
    """
    function.__module__ = "{{cookiecutter.package_name}}"
    return function


def _module(op: Op, function):
    """An nn.Module that holds the op's scalars and applies the op to its inputs."""
    names = [s.name for s in op.params]
    init = [f"def __init__(self, {', '.join(f'{s.name}={s.default!r}' for s in op.params)}):"]
    if not op.params:
        init = ["def __init__(self):"]
    init.append("    torch.nn.Module.__init__(self)")
    init += [f"    self.{name} = {s.type.__name__}({name})" for name, s in zip(names, op.params, strict=True)]
    inputs = ", ".join(t.name for t in op.inputs)
    call = ", ".join([t.name for t in op.inputs] + [f"self.{name}" for name in names])
    source = "\n".join(init) + f"\ndef forward(self, {inputs}):\n    return _function({call})\n"
    namespace = {"torch": torch, "_function": function}
    exec(source, namespace)  # noqa: S102 - the source is made from the declaration above

    def extra_repr(self) -> str:
        return ", ".join(f"{name}={getattr(self, name)!r}" for name in names)

    return type(
        op.class_name,
        (torch.nn.Module,),
        {
            "__init__": namespace["__init__"],
            "forward": namespace["forward"],
            "extra_repr": extra_repr,
            "__doc__": f"Applies ``{op.math}``. See :func:`{{cookiecutter.package_name}}.{op.name}`.",
            "__module__": "{{cookiecutter.package_name}}",
        },
    )


# Each op's backward, by name: the tests call it directly (its checks, its errors).
BACKWARDS: dict = {}


def register(op: Op):
    """Connects one op to torch: returns its public function and its module."""
    forward, backward = _kernels(op)
    BACKWARDS[op.name] = backward
    function = _function(op, forward)
    return function, _module(op, function)
