"""scaled_gelu against its float64 plain-PyTorch reference, and everything around the kernels:
autograd, the module, torch.compile, streams, CUDA graphs, odd layouts and bad input."""

from __future__ import annotations

import pytest
import torch
from support import (
    CPU_IMPL,
    DEVICES,
    DTYPES,
    FULLGRAPH,
    KERNEL,
    SCALE,
    TOLERANCES,
    UNSUPPORTED_DTYPES,
    op,
    package,
    poison_allocator,
    random_input,
    raw_backward,
    reference,
    requires_cuda,
    shape_id,
)

# Odd sizes on purpose: single elements, lengths that are not a multiple of the vector width,
# more rows or elements than the GPU holds at once, and a row wider than a block.
SHAPES = [(1,), (7,), (199, 760), (3, 5, 33), (2, 1025), (64, 4099), (20011, 3), (2053, 1031)]


@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("device", DEVICES)
def test_forward_matches_reference(device, dtype, shape):
    x = random_input(shape, dtype, device)
    poison_allocator(shape, dtype, device)
    y = op(x, SCALE)
    assert (y.shape, y.dtype, y.device) == (x.shape, x.dtype, x.device)
    expected = reference(x.double(), SCALE).to(dtype)
    torch.testing.assert_close(y, expected, **TOLERANCES[dtype])


@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("device", DEVICES)
def test_backward_matches_reference(device, dtype, shape):
    x = random_input(shape, dtype, device).requires_grad_()
    grad_out = random_input(shape, dtype, device, std=1.0)
    poison_allocator(shape, dtype, device)
    (grad_x,) = torch.autograd.grad(op(x, SCALE), x, grad_out)
    x64 = x.detach().double().requires_grad_()
    (expected,) = torch.autograd.grad(reference(x64, SCALE), x64, grad_out.double())
    torch.testing.assert_close(grad_x, expected.to(dtype), **TOLERANCES[dtype])


@pytest.mark.parametrize("device", DEVICES)
def test_module_matches_function(device):
    module = package.ScaledGelu(scale=SCALE)
    x = random_input((9, 31), torch.float32, device)
    torch.testing.assert_close(module(x), op(x, SCALE), rtol=0, atol=0)
    assert f"scale={SCALE}" in repr(module)


@pytest.mark.parametrize("device", DEVICES)
def test_torch_compile(device):
    def step(x):
        return op(x * 2.0, SCALE) + 1.0

    compiled = torch.compile(step, fullgraph=FULLGRAPH)
    x = random_input((37, 129), torch.float32, device).requires_grad_()
    grad_out = random_input((37, 129), torch.float32, device, std=1.0)
    y = compiled(x)
    (grad_x,) = torch.autograd.grad(y, x, grad_out)
    y_eager = step(x)
    (grad_eager,) = torch.autograd.grad(y_eager, x, grad_out)
    torch.testing.assert_close(y, y_eager, **TOLERANCES[torch.float32])
    torch.testing.assert_close(grad_x, grad_eager, **TOLERANCES[torch.float32])


@requires_cuda
def test_runs_on_the_current_stream():
    x = random_input((512, 1000), torch.float32, "cuda")
    new_x = random_input((512, 1000), torch.float32, "cuda")
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        # Keep the side stream busy, so a kernel launched on any other stream would run before
        # the copy below and read the old x.
        torch.cuda._sleep(100_000_000)
        x.copy_(new_x)
        y = op(x, SCALE)
    torch.cuda.current_stream().wait_stream(stream)
    torch.testing.assert_close(y, reference(new_x.double(), SCALE).float(), **TOLERANCES[torch.float32])


@requires_cuda
def test_cuda_graph_capture_and_replay():
    static_x = random_input((128, 513), torch.float32, "cuda")
    warmup = torch.cuda.Stream()
    warmup.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(warmup):
        op(static_x, SCALE)
    torch.cuda.current_stream().wait_stream(warmup)

    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_y = op(static_x, SCALE)
    for _ in range(2):
        new_x = random_input((128, 513), torch.float32, "cuda")
        static_x.copy_(new_x)
        graph.replay()
        torch.testing.assert_close(static_y, reference(new_x.double(), SCALE).float(), **TOLERANCES[torch.float32])


@pytest.mark.parametrize("shape", [(0,), (0, 5), (3, 0), (2, 0, 4)], ids=shape_id)
@pytest.mark.parametrize("device", DEVICES)
def test_empty_input(device, shape):
    x = torch.empty(shape, device=device).requires_grad_()
    y = op(x, SCALE)
    assert y.shape == x.shape
    (grad_x,) = torch.autograd.grad(y, x, torch.empty_like(y))
    assert grad_x.shape == x.shape


@pytest.mark.parametrize("device", DEVICES)
def test_non_contiguous_and_misaligned_input(device):
    base = random_input((64, 130), torch.float32, device)
    flat = random_input((4 * 1031 + 1,), torch.float32, device)
    views = {
        "transposed": base.t(),
        "strided": base[:, ::2],
        "offset rows": base[:, 1:],
        "contiguous, not 16-byte aligned": flat[1:].view(4, 1031),
    }
    for name, view in views.items():
        x = view.detach().requires_grad_()
        y = op(x, SCALE)
        (grad_x,) = torch.autograd.grad(y, x, torch.ones_like(y))
        x64 = view.double().requires_grad_()
        expected = reference(x64, SCALE)
        (expected_grad,) = torch.autograd.grad(expected, x64, torch.ones_like(expected))
        torch.testing.assert_close(y, expected.float(), **TOLERANCES[torch.float32], msg=name)
        torch.testing.assert_close(grad_x, expected_grad.float(), **TOLERANCES[torch.float32], msg=name)


@pytest.mark.parametrize("device", DEVICES)
def test_zero_dim_input(device):
    x = torch.tensor(0.3, device=device)
    if KERNEL == "rowwise":
        with pytest.raises(RuntimeError, match="at least one dimension"):
            op(x, SCALE)
    else:
        torch.testing.assert_close(op(x, SCALE), reference(x.double(), SCALE).float())


@pytest.mark.parametrize("dtype", UNSUPPORTED_DTYPES, ids=str)
@pytest.mark.parametrize("device", DEVICES)
def test_unsupported_dtype_is_refused(device, dtype):
    x = torch.arange(12, device=device).reshape(3, 4).to(dtype)
    with pytest.raises(RuntimeError, match="has dtype .* kernels for"):
        op(x, SCALE)


def test_cpu_input():
    x = random_input((5, 17), torch.float32, "cpu")
    if CPU_IMPL:
        torch.testing.assert_close(op(x, SCALE), reference(x.double(), SCALE).float(), **TOLERANCES[torch.float32])
    else:
        with pytest.raises(RuntimeError, match="CUDA kernels only"):
            op(x, SCALE)


@requires_cuda
def test_mismatched_backward_inputs_are_refused():
    saved = random_input((4, 8), torch.float32, "cuda")
    with pytest.raises(RuntimeError, match="same shape"):
        raw_backward(random_input((4, 9), torch.float32, "cuda"), saved, SCALE)
    # Without CPU kernels a CPU tensor is refused before the two devices are compared.
    with pytest.raises(RuntimeError, match="one device" if CPU_IMPL else "CUDA kernels only"):
        raw_backward(random_input((4, 8), torch.float32, "cpu"), saved, SCALE)
    other_dtype = next((d for d in DTYPES if d != torch.float32), None)
    if other_dtype is not None:
        with pytest.raises(RuntimeError, match="convert one to the other"):
            raw_backward(random_input((4, 8), other_dtype, "cuda"), saved, SCALE)
