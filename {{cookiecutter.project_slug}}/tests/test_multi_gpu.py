"""Each op on a GPU that is not the current one: the kernels run on the tensors' device, on that
device's current stream, and give what the same call gives on cuda:0. Skipped with fewer than two GPUs."""

from __future__ import annotations

import pytest
import torch
from support import (
    DTYPES,
    FULLGRAPH,
    OP_NAMES,
    OPS,
    as_tuple,
    check_forward,
    function,
    grads_of,
    random_inputs,
    reference,
    scalars,
)

pytestmark = pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA GPUs")

# (the current device, the device of the tensors)
PLACEMENTS = [(0, 1), (1, 0)]
PLACEMENT_IDS = ["cuda1-while-cuda0-current", "cuda0-while-cuda1-current"]
SHAPE = (37, 1031)


def forward_backward(op, fn, inputs, grad_outputs, device: str) -> tuple[torch.Tensor, ...]:
    leaves = [x.to(device).requires_grad_(t.grad) for x, t in zip(inputs, op.inputs, strict=True)]
    outputs = as_tuple(fn(*leaves, **scalars(op)))
    grads = grads_of(op, outputs, leaves, [g.to(device) for g in grad_outputs])
    return tuple(o.detach() for o in outputs) + tuple(grads)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compile"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("current,device", PLACEMENTS, ids=PLACEMENT_IDS)
@pytest.mark.parametrize("op_name", OP_NAMES)
def test_forward_backward_on_another_device(op_name, current, device, dtype, compiled):
    op = OPS[op_name]
    inputs = random_inputs(op, SHAPE, dtype, "cpu")
    grad_outputs = [torch.randn(SHAPE).to(dtype) for _ in op.outputs]
    # A fresh start for each test: the devices and dtypes would otherwise add up past dynamo's recompile limit.
    torch._dynamo.reset()
    fn = torch.compile(function(op), fullgraph=FULLGRAPH) if compiled else function(op)
    with torch.cuda.device(0):
        expected = forward_backward(op, fn, inputs, grad_outputs, "cuda:0")
    with torch.cuda.device(current):
        results = forward_backward(op, fn, inputs, grad_outputs, f"cuda:{device}")
        assert torch.cuda.current_device() == current, "the op changed the current device"
    assert all(r.device == torch.device("cuda", device) for r in results)
    # The same GPU model runs the same kernels with the same launch: the same bits. Other models may
    # launch another grid.
    exact = torch.cuda.get_device_name(0) == torch.cuda.get_device_name(1)
    for r, e in zip(results, expected, strict=True):
        tolerance = dict(rtol=0, atol=0) if exact else op.tolerances(dtype, "backward")
        torch.testing.assert_close(r.cpu(), e.cpu(), **tolerance)
    check_forward(op, [x.to(f"cuda:{device}") for x in inputs], scalars(op))


@pytest.mark.parametrize("current,device", PLACEMENTS, ids=PLACEMENT_IDS)
@pytest.mark.parametrize("op_name", OP_NAMES)
def test_runs_on_the_current_stream_of_the_tensors_device(op_name, current, device):
    """A side stream of the tensors' device is kept busy, then writes the inputs and runs the op while
    the other GPU is the current device: a kernel launched on any other stream would read the old inputs."""
    op = OPS[op_name]
    inputs = random_inputs(op, (512, 1000), torch.float32, f"cuda:{device}")
    new_inputs = random_inputs(op, (512, 1000), torch.float32, f"cuda:{device}")
    side = torch.cuda.Stream(device=device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):
        torch.cuda._sleep(100_000_000)
        for x, new in zip(inputs, new_inputs, strict=True):
            x.copy_(new)
        with torch.cuda.device(current):
            outputs = as_tuple(function(op)(*inputs, **scalars(op)))
    torch.cuda.current_stream(device).wait_stream(side)
    for out, exp in zip(outputs, reference(op, new_inputs, scalars(op)), strict=True):
        torch.testing.assert_close(out, exp.float(), **op.tolerances(torch.float32, "forward"))
