"""Soak: 10,000 forward + backward calls at mixed shapes and dtypes on a GPU. The memory allocated
returns to the same figure after every call (nothing leaks), and the same inputs give the same
results, bit for bit, at the end as at the start."""

from __future__ import annotations

import gc

import torch
from support import DTYPES, SCALE, op, random_input, requires_cuda

CALLS = 10_000
SHAPES = [(7,), (199, 760), (2, 1025), (64, 4099), (2053, 1031), (8, 65537)]


def step(x: torch.Tensor, grad_out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    leaf = x.detach().requires_grad_()
    y = op(leaf, SCALE)
    (grad_x,) = torch.autograd.grad(y, leaf, grad_out)
    return y.detach(), grad_x


@requires_cuda
def test_soak_memory_flat_and_results_unchanged():
    cases = []
    for i, shape in enumerate(SHAPES):
        dtype = DTYPES[i % len(DTYPES)]
        cases.append((random_input(shape, dtype, "cuda"), random_input(shape, dtype, "cuda", std=1.0)))
    first = [step(*case) for case in cases]
    # Readings after gc.collect(): a tensor held by a reference cycle is freed by Python's cycle
    # collector at a time of its choosing, not when the call returns.
    gc.collect()
    torch.cuda.synchronize()
    baseline = torch.cuda.memory_allocated()
    allocated = []
    for i in range(CALLS):
        step(*cases[i % len(cases)])
        if (i + 1) % 1000 == 0:
            gc.collect()
            torch.cuda.synchronize()
            allocated.append(torch.cuda.memory_allocated())
    print(f"\nsoak: {CALLS} calls; allocated bytes at start {baseline}, every 1000 calls {sorted(set(allocated))}")
    assert all(a == baseline for a in allocated), f"allocated memory moved from {baseline}: {allocated}"
    for (x, grad_out), before in zip(cases, first, strict=True):
        after = step(x, grad_out)
        assert torch.equal(before[0], after[0]), f"{tuple(x.shape)} {x.dtype}: the output changed"
        assert torch.equal(before[1], after[1]), f"{tuple(x.shape)} {x.dtype}: the gradient changed"
