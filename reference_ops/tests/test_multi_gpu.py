"""The ops on a GPU that is not the current one: they run on the tensors' device, on that device's
current stream, and give what the same call gives on cuda:0 (and float64 says is right).
Skipped with fewer than two GPUs."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import reference_ops

pytestmark = pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA GPUs")

OPS = ["layer_norm", "rms_norm"]
# (current device, device of the tensors)
PLACEMENTS = [(0, 1), (1, 0)]
PLACEMENT_IDS = ["cuda:1 while cuda:0 is current", "cuda:0 while cuda:1 is current"]
M, N = 67, 1000
EPS = 1e-5
# Against the float64 reference: the output dtype's rounding, the statistics in float32.
TOLERANCES = {torch.float32: dict(rtol=1e-4, atol=1e-4), torch.bfloat16: dict(rtol=2e-2, atol=5e-2)}


def norm(op, x, w, b):
    if op == "layer_norm":
        return reference_ops.layer_norm(x, (x.shape[-1],), w, b, EPS)
    return reference_ops.rms_norm(x, (x.shape[-1],), w, EPS)


def torch_norm(op, x, w, b):
    if op == "layer_norm":
        return F.layer_norm(x, (x.shape[-1],), w, b, EPS)
    return F.rms_norm(x, (x.shape[-1],), w, EPS)


def make_inputs(op, dtype):
    """x, weight, bias (None for rms_norm) and the output gradient, on the CPU, the same every call."""
    g = torch.Generator().manual_seed(1234)
    x = torch.randn(M, N, generator=g) * 2 + 0.5
    w = torch.randn(N, generator=g) * 0.5 + 1
    b = torch.randn(N, generator=g) if op == "layer_norm" else None
    dy = torch.randn(M, N, generator=g)
    return [None if t is None else t.to(dtype) for t in (x, w, b, dy)]


def forward_backward(fn, op, tensors, device):
    """y and the gradients of x, weight (and bias) of fn(op, x, w, b) with the tensors on `device`."""
    x, w, b, dy = (None if t is None else t.to(device) for t in tensors)
    leaves = [t.requires_grad_() for t in (x, w, b) if t is not None]
    y = fn(op, *[t.requires_grad_() if t is not None else None for t in (x, w, b)])
    grads = torch.autograd.grad(y, leaves, dy)
    return [y.detach(), *grads]


def same_gpus() -> bool:
    return torch.cuda.get_device_name(0) == torch.cuda.get_device_name(1)


def check(results, baseline, reference, dtype, device):
    for name, out, base, ref in zip(("y", "dx", "dweight", "dbias"), results, baseline, reference, strict=False):
        assert out.device == torch.device("cuda", device), f"{name} is on {out.device}, not cuda:{device}"
        assert out.dtype == dtype
        # The same GPU model runs the same kernels with the same launch: bit for bit. (GPUs of other
        # models may split the reductions differently.)
        if same_gpus():
            torch.testing.assert_close(out.cpu(), base.cpu(), rtol=0, atol=0, msg=f"{name} differs from cuda:0's")
        else:
            torch.testing.assert_close(out.cpu(), base.cpu(), **TOLERANCES[dtype], msg=f"{name} vs cuda:0")
        torch.testing.assert_close(out.cpu().double(), ref.cpu(), **TOLERANCES[dtype], msg=f"{name} vs float64")


def compiled_norm():
    # A fresh start for each test: the devices, dtypes and ops would otherwise add up past dynamo's
    # recompile limit, after which the calls would silently run eagerly.
    torch._dynamo.reset()
    return torch.compile(norm, fullgraph=True, dynamic=False)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compile"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("current,device", PLACEMENTS, ids=PLACEMENT_IDS)
def test_forward_backward_on_another_device(current, device, op, dtype, compiled, kernels_when_compiled):
    tensors = make_inputs(op, dtype)
    fn = compiled_norm() if compiled else norm
    with torch.cuda.device(0):
        baseline = forward_backward(fn, op, tensors, "cuda:0")
    reference = forward_backward(torch_norm, op, [None if t is None else t.double() for t in tensors], "cpu")
    with torch.cuda.device(current):
        results = forward_backward(fn, op, tensors, f"cuda:{device}")
        assert torch.cuda.current_device() == current, "the op changed the current device"
    torch.cuda.synchronize(0)
    torch.cuda.synchronize(1)
    check(results, baseline, reference, dtype, device)


@pytest.mark.parametrize("module", ["LayerNorm", "RMSNorm"])
@pytest.mark.parametrize("current,device", PLACEMENTS, ids=PLACEMENT_IDS)
def test_module_on_another_device(current, device, module):
    with torch.cuda.device(current):
        ours = getattr(reference_ops, module)(N, eps=EPS, device=f"cuda:{device}")
        theirs = getattr(torch.nn, module)(N, eps=EPS, device=f"cuda:{device}")
        x = torch.randn(M, N, device=f"cuda:{device}")
        torch.testing.assert_close(ours(x), theirs(x), rtol=1e-5, atol=1e-5)
        ours(x).sum().backward()
        theirs(x).sum().backward()
        assert ours.weight.grad.device == torch.device("cuda", device)
        torch.testing.assert_close(ours.weight.grad, theirs.weight.grad, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compile"])
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("current,device", PLACEMENTS, ids=PLACEMENT_IDS)
def test_runs_on_the_current_stream_of_the_tensors_device(current, device, op, compiled, kernels_when_compiled):
    """A side stream of the tensors' device is made busy, then writes x and runs the op; the
    current device is switched to the other GPU for the call. A kernel launched on any other
    stream would run before the copy and read the old x."""
    fn = compiled_norm() if compiled else norm
    dev = f"cuda:{device}"
    x = torch.zeros(M, N, device=dev)
    new_x, w, b, _ = (None if t is None else t.to(dev) for t in make_inputs(op, torch.float32))
    if compiled:  # compile (and load the kernels) before the timed race
        with torch.cuda.device(current):
            fn(op, new_x, w, b)
    torch.cuda.synchronize(device)
    side = torch.cuda.Stream(device=device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):
        torch.cuda._sleep(200_000_000)
        x.copy_(new_x)
        with torch.cuda.device(current):
            assert torch.cuda.current_stream(device) == side
            y = fn(op, x, w, b)
    torch.cuda.current_stream(device).wait_stream(side)
    expected = torch_norm(op, new_x.double(), w.double(), None if b is None else b.double())
    torch.testing.assert_close(y.double(), expected, **TOLERANCES[torch.float32])
