"""{{cookiecutter.op_name}} on a GPU that is not the current one: the kernels run on the tensor's device, on that
device's current stream, and give what the same call gives on cuda:0. Skipped with fewer than two GPUs."""

from __future__ import annotations

import pytest
import torch
from support import DTYPES, FULLGRAPH, SCALE, TOLERANCES, op, random_input, reference

pytestmark = pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA GPUs")

# (the current device, the device of the tensors)
PLACEMENTS = [(0, 1), (1, 0)]
PLACEMENT_IDS = ["cuda1-while-cuda0-current", "cuda0-while-cuda1-current"]
SHAPE = (37, 1031)


def forward_backward(fn, x: torch.Tensor, grad_out: torch.Tensor, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    leaf = x.to(device).requires_grad_()
    y = fn(leaf, SCALE)
    (grad_x,) = torch.autograd.grad(y, leaf, grad_out.to(device))
    return y.detach(), grad_x


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compile"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("current,device", PLACEMENTS, ids=PLACEMENT_IDS)
def test_forward_backward_on_another_device(current, device, dtype, compiled):
    x = random_input(SHAPE, dtype, "cpu")
    grad_out = random_input(SHAPE, dtype, "cpu", std=1.0)
    # A fresh start for each test: the devices and dtypes would otherwise add up past dynamo's recompile limit.
    torch._dynamo.reset()
    fn = torch.compile(op, fullgraph=FULLGRAPH) if compiled else op
    with torch.cuda.device(0):
        expected_y, expected_grad = forward_backward(fn, x, grad_out, "cuda:0")
    with torch.cuda.device(current):
        y, grad_x = forward_backward(fn, x, grad_out, f"cuda:{device}")
        assert torch.cuda.current_device() == current, "the op changed the current device"
    assert y.device == grad_x.device == torch.device("cuda", device)
    # The same GPU model runs the same kernels with the same launch: the same bits. Other models may
    # launch another grid.
    exact = torch.cuda.get_device_name(0) == torch.cuda.get_device_name(1)
    tolerance = dict(rtol=0, atol=0) if exact else TOLERANCES[dtype]
    torch.testing.assert_close(y.cpu(), expected_y.cpu(), **tolerance)
    torch.testing.assert_close(grad_x.cpu(), expected_grad.cpu(), **tolerance)
    x64 = x.double().requires_grad_()
    y64 = reference(x64, SCALE)
    (grad64,) = torch.autograd.grad(y64, x64, grad_out.double())
    torch.testing.assert_close(y.cpu(), y64.detach().to(dtype), **TOLERANCES[dtype])
    torch.testing.assert_close(grad_x.cpu(), grad64.to(dtype), **TOLERANCES[dtype])


@pytest.mark.parametrize("current,device", PLACEMENTS, ids=PLACEMENT_IDS)
def test_runs_on_the_current_stream_of_the_tensors_device(current, device):
    """A side stream of the tensor's device is kept busy, then writes x and runs the op while the
    other GPU is the current device: a kernel launched on any other stream would read the old x."""
    x = random_input((512, 1000), torch.float32, f"cuda:{device}")
    new_x = random_input((512, 1000), torch.float32, f"cuda:{device}")
    side = torch.cuda.Stream(device=device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):
        torch.cuda._sleep(100_000_000)
        x.copy_(new_x)
        with torch.cuda.device(current):
            y = op(x, SCALE)
    torch.cuda.current_stream(device).wait_stream(side)
    torch.testing.assert_close(y, reference(new_x.double(), SCALE).float(), **TOLERANCES[torch.float32])
