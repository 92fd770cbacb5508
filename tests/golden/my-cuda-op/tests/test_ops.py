"""Every op of the package against its float64 reference, and everything around the kernels: autograd,
the module, torch.compile, opcheck, streams, CUDA graphs, odd layouts and bad input. Driven by each
op's declaration: a new op in my_cuda_op.ALL_OPS is covered without new code here."""

from __future__ import annotations

import pytest
import torch
from support import (
    CPU_IMPL,
    DEVICES,
    DTYPES,
    FULLGRAPH,
    OP_NAMES,
    OPS,
    UNSUPPORTED_DTYPES,
    as_tuple,
    check_backward,
    check_forward,
    function,
    grads_of,
    output_shapes,
    package,
    poison_allocator,
    random_inputs,
    raw_backward,
    reference,
    requires_cuda,
    scalars,
    shape_id,
)

# Odd sizes on purpose: single elements, lengths that are not a multiple of the vector width, more
# elements than the GPU holds at once, and more blocks than fit in one wave.
SHAPES = [(1,), (7,), (199, 760), (3, 5, 33), (2, 1025), (64, 4099), (20011, 3), (2053, 1031)]


@pytest.fixture(params=OP_NAMES)
def op(request):
    return OPS[request.param]


@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("device", DEVICES)
def test_forward_matches_reference(op, device, dtype, shape):
    inputs = random_inputs(op, shape, dtype, device)
    poison_allocator(shape, dtype, device)
    outputs = check_forward(op, inputs, scalars(op))
    assert [o.shape for o in outputs] == output_shapes(op, shape)


@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("device", DEVICES)
def test_backward_matches_reference(op, device, dtype, shape):
    inputs = random_inputs(op, shape, dtype, device)
    poison_allocator(shape, dtype, device)
    check_backward(op, inputs, scalars(op))


@pytest.mark.parametrize("device", DEVICES)
def test_default_scalars(op, device):
    inputs = random_inputs(op, (9, 31), torch.float32, device)
    defaults = {s.name: s.default for s in op.params}
    for out, exp in zip(as_tuple(function(op)(*inputs)), reference(op, inputs, defaults), strict=True):
        torch.testing.assert_close(out, exp.float(), **op.tolerances(torch.float32, "forward"))


@pytest.mark.parametrize("device", DEVICES)
def test_module_matches_function(op, device):
    params = scalars(op)
    module = getattr(package, op.class_name)(**params)
    inputs = random_inputs(op, (9, 31), torch.float32, device)
    for a, b in zip(as_tuple(module(*inputs)), as_tuple(function(op)(*inputs, **params)), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    for name, value in params.items():
        assert f"{name}={value!r}" in repr(module)


@pytest.mark.parametrize("device", DEVICES)
def test_no_grad_and_inference_mode(op, device):
    inputs = [x.requires_grad_() for x in random_inputs(op, (17, 65), torch.float32, device)]
    expected = as_tuple(function(op)(*inputs, **scalars(op)))
    with torch.no_grad():
        plain = as_tuple(function(op)(*inputs, **scalars(op)))
    with torch.inference_mode():
        inference = as_tuple(function(op)(*inputs, **scalars(op)))
    for e, p, i in zip(expected, plain, inference, strict=True):
        assert e.requires_grad and not p.requires_grad and not i.requires_grad
        torch.testing.assert_close(p, e.detach(), rtol=0, atol=0)
        torch.testing.assert_close(i, e.detach(), rtol=0, atol=0)


@pytest.mark.parametrize("device", DEVICES)
def test_torch_compile(op, device):
    params = scalars(op)

    def step(*inputs):
        return tuple(o + 1.0 for o in as_tuple(function(op)(*[x * 2.0 for x in inputs], **params)))

    compiled = torch.compile(step, fullgraph=FULLGRAPH)
    inputs = [
        x.requires_grad_(t.grad)
        for x, t in zip(random_inputs(op, (37, 129), torch.float32, device), op.inputs, strict=True)
    ]
    outputs = compiled(*inputs)
    grad_outputs = [torch.randn_like(o) for o in outputs]
    grads = grads_of(op, outputs, inputs, grad_outputs)
    eager = step(*inputs)
    eager_grads = grads_of(op, eager, inputs, grad_outputs)
    for a, b in zip(outputs + grads, eager + eager_grads, strict=True):
        torch.testing.assert_close(a, b, **op.tolerances(torch.float32, "backward"))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(op, device, dtype):
    """torch.library.opcheck: schema, autograd registration, fake kernels, AOT dispatch."""
    ops = getattr(torch.ops, package._registration.NAMESPACE)
    inputs = [
        x.requires_grad_(t.grad) for x, t in zip(random_inputs(op, (5, 33), dtype, device), op.inputs, strict=True)
    ]
    torch.library.opcheck(getattr(ops, f"{op.name}_fwd").default, (*inputs, *scalars(op).values()))
    outputs = as_tuple(function(op)(*[x.detach() for x in inputs], **scalars(op)))
    by_name = {t.name: x.detach() for t, x in zip(op.inputs, inputs, strict=True)}
    by_name |= {t.name: y for t, y in zip(op.outputs, outputs, strict=True)}
    args = [torch.randn_like(y) for y in outputs] + [by_name[name] for name in op.saves]
    torch.library.opcheck(getattr(ops, f"{op.name}_bwd").default, (*args, *scalars(op).values()))


@pytest.mark.parametrize("device", DEVICES)
def test_gradcheck(op, device):
    """Gradients against finite differences of the op itself (float64)."""
    inputs = [
        x.requires_grad_(t.grad)
        for x, t in zip(random_inputs(op, (4, 7), torch.float64, device), op.inputs, strict=True)
    ]
    assert torch.autograd.gradcheck(lambda *xs: function(op)(*xs, **scalars(op)), inputs)


@requires_cuda
def test_runs_on_the_current_stream(op):
    inputs = random_inputs(op, (512, 1000), torch.float32, "cuda")
    new_inputs = random_inputs(op, (512, 1000), torch.float32, "cuda")
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        # Keep the side stream busy, so a kernel launched on any other stream would run before
        # the copies below and read the old inputs.
        torch.cuda._sleep(100_000_000)
        for x, new in zip(inputs, new_inputs, strict=True):
            x.copy_(new)
        outputs = as_tuple(function(op)(*inputs, **scalars(op)))
    torch.cuda.current_stream().wait_stream(stream)
    for out, exp in zip(outputs, reference(op, new_inputs, scalars(op)), strict=True):
        torch.testing.assert_close(out, exp.float(), **op.tolerances(torch.float32, "forward"))


@requires_cuda
def test_cuda_graph_capture_and_replay(op):
    static = random_inputs(op, (128, 513), torch.float32, "cuda")
    warmup = torch.cuda.Stream()
    warmup.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(warmup):
        function(op)(*static, **scalars(op))
    torch.cuda.current_stream().wait_stream(warmup)

    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        outputs = as_tuple(function(op)(*static, **scalars(op)))
    for _ in range(2):
        new = random_inputs(op, (128, 513), torch.float32, "cuda")
        for x, n in zip(static, new, strict=True):
            x.copy_(n)
        graph.replay()
        for out, exp in zip(outputs, reference(op, new, scalars(op)), strict=True):
            torch.testing.assert_close(out, exp.float(), **op.tolerances(torch.float32, "forward"))


@pytest.mark.parametrize("shape", [(0,), (0, 5), (3, 0), (2, 0, 4)], ids=shape_id)
@pytest.mark.parametrize("device", DEVICES)
def test_empty_input(op, device, shape):
    inputs = [
        torch.empty(op.input_shape(t, torch.Size(shape)), device=device).requires_grad_(t.grad) for t in op.inputs
    ]
    outputs = as_tuple(function(op)(*inputs, **scalars(op)))
    assert [o.shape for o in outputs] == output_shapes(op, shape)
    # A per-row output of rows of no element (rowwise ops) is its reduction of nothing, as in torch.
    for out, exp in zip(outputs, reference(op, inputs, scalars(op)), strict=True):
        torch.testing.assert_close(out, exp.float(), equal_nan=True)
    grads = grads_of(op, outputs, inputs, [torch.empty_like(o) for o in outputs])
    assert [g.shape for g in grads] == [x.shape for x, t in zip(inputs, op.inputs, strict=True) if t.grad]


@pytest.mark.parametrize("device", DEVICES)
def test_non_contiguous_and_misaligned_input(op, device):
    def views():
        base = torch.randn(64, 130, device=device) * 3
        flat = torch.randn(4 * 1031 + 1, device=device) * 3
        return {
            "transposed": base.t(),
            "strided": base[:, ::2],
            "offset rows": base[:, 1:],
            "expanded": base[:1].expand(64, 130),
            "contiguous, not 16-byte aligned": flat[1:].view(4, 1031),
        }

    all_views = [views() for _ in op.inputs]  # each input its own tensor
    for name in all_views[0]:
        # A per-row input (rowwise ops) takes one value per row of the first input's view.
        inputs = [v[name] for v in all_views]
        inputs = [
            x if not t.per_row else (torch.randn(inputs[0].shape[:-1], device=device) * 3)
            for x, t in zip(inputs, op.inputs, strict=True)
        ]
        if any(t.domain is not None for t in op.inputs):
            inputs = [
                x.sigmoid() * (t.domain[1] - t.domain[0]) + t.domain[0] if t.domain else x
                for x, t in zip(inputs, op.inputs, strict=True)
            ]
        check_forward(op, inputs, scalars(op))
        check_backward(op, inputs, scalars(op))


@pytest.mark.parametrize("device", DEVICES)
def test_zero_dim_input(op, device):
    inputs = [x.reshape(()) for x in random_inputs(op, (1,), torch.float32, device)]
    if op.kind == "rowwise":
        with pytest.raises(RuntimeError, match="at least one dimension"):
            function(op)(*inputs, **scalars(op))
    else:
        check_forward(op, inputs, scalars(op))


@pytest.mark.parametrize("dtype", UNSUPPORTED_DTYPES, ids=str)
@pytest.mark.parametrize("device", DEVICES)
def test_unsupported_dtype_is_refused(op, device, dtype):
    inputs = [torch.arange(12, device=device).reshape(3, 4).to(dtype) for _ in op.inputs]
    with pytest.raises(RuntimeError, match=f"{op.inputs[0].name} has dtype .* kernels for"):
        function(op)(*inputs, **scalars(op))


def test_cpu_input(op):
    inputs = random_inputs(op, (5, 17), torch.float32, "cpu")
    if CPU_IMPL:
        check_forward(op, inputs, scalars(op))
    else:
        with pytest.raises(RuntimeError, match="CUDA kernels only"):
            function(op)(*inputs, **scalars(op))


@requires_cuda
def test_mismatched_inputs_are_refused(op):
    """Every pair of tensors of a call must agree: shape, device, dtype; each message names both."""
    shape = (4, 8)
    outputs = as_tuple(function(op)(*random_inputs(op, shape, torch.float32, "cuda"), **scalars(op)))
    tensors = [torch.randn_like(o) for o in outputs] + [
        torch.randn(op.input_shape(t, torch.Size(shape)), device="cuda") for t in op.saved()
    ]  # the backward's: output gradients, then the saved tensors
    backward = raw_backward(op)
    values = list(scalars(op).values())
    if len(tensors) < 2:
        pytest.skip("the backward takes one tensor")
    last = len(tensors) - 1
    # Another row count: wrong for a tensor shaped like x or one of one value per row.
    bad_shape = [t if i != last else torch.randn(5, *t.shape[1:], device="cuda") for i, t in enumerate(tensors)]
    with pytest.raises(RuntimeError, match="same shape|has shape"):
        backward(*bad_shape, *values)
    # Without CPU kernels a CPU tensor is refused before the two devices are compared.
    bad_device = [t if i != last else t.cpu() for i, t in enumerate(tensors)]
    with pytest.raises(RuntimeError, match="one device" if CPU_IMPL else "CUDA kernels only"):
        backward(*bad_device, *values)
    other_dtype = next((d for d in DTYPES if d != torch.float32), None)
    if other_dtype is not None:
        bad_dtype = [t if i != last else t.to(other_dtype) for i, t in enumerate(tensors)]
        with pytest.raises(RuntimeError, match="convert one to the other"):
            backward(*bad_dtype, *values)


def test_scalars_are_checked_against_their_range(op):
    """Values in a scalar's declared range pass, values outside are refused before any kernel runs."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    inputs = random_inputs(op, (3, 4), torch.float32, device)
    for s in op.params:
        for good in (s.default, *s.examples):
            if device == "cuda" or CPU_IMPL:
                function(op)(*inputs, **{s.name: good})
        outside = [s.low - 1 if s.low is not None else None, s.high + 1 if s.high is not None else None]
        for bad in [v for v in outside + [0 if s.nonzero else None] if v is not None]:
            with pytest.raises(ValueError, match=f"{s.name}={s.type(bad)!r} is outside its range"):
                function(op)(*inputs, **{s.name: s.type(bad)})
