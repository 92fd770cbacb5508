"""Soak: 10,000 forward + backward calls at mixed shapes, dtypes and ops on a GPU. The memory
allocated returns to the same figure after every call (no leak, no growing workspace), and the
same inputs give the same results, bit for bit, at the end as at the start."""

from __future__ import annotations

import gc

import pytest
import torch

import reference_ops

CALLS = 10_000
SHAPES = [(1, 4096), (7, 760), (64, 1024), (199, 4095), (3, 65536), (513, 512), (2000, 4095), (2, 300001)]
DTYPES = [torch.bfloat16, torch.float16, torch.float32]


def make_cases():
    gen = torch.Generator().manual_seed(0)
    cases = []
    for i, (M, N) in enumerate(SHAPES):
        for j, op in enumerate(("layer_norm", "rms_norm")):
            dtype = DTYPES[(i + j) % len(DTYPES)]
            x = (torch.randn(M, N, generator=gen) + 1).to("cuda", dtype)
            w = (torch.randn(N, generator=gen) * 0.5 + 1).to("cuda", dtype)
            b = torch.randn(N, generator=gen).to("cuda", dtype) if op == "layer_norm" else None
            dy = torch.randn(M, N, generator=gen).to("cuda", dtype)
            cases.append((op, N, x, w, b, dy))
    return cases


def step(op, N, x, w, b, dy):
    leaves = [t.detach().requires_grad_() for t in (x, w, b) if t is not None]
    if op == "layer_norm":
        y = reference_ops.layer_norm(leaves[0], (N,), leaves[1], leaves[2], 1e-5)
    else:
        y = reference_ops.rms_norm(leaves[0], (N,), leaves[1], 1e-6)
    return (y.detach(), *torch.autograd.grad(y, leaves, dy))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_soak_memory_flat_and_results_unchanged():
    cases = make_cases()
    first = [step(*case) for case in cases]
    # Readings after gc.collect(): a tensor held by a reference cycle is freed by Python's cycle
    # collector at a time of its choosing, not when the call returns.
    gc.collect()
    torch.cuda.synchronize()
    baseline = torch.cuda.memory_allocated()
    allocated, reserved = [], []
    for i in range(CALLS):
        outputs = step(*cases[i % len(cases)])
        del outputs
        if (i + 1) % 1000 == 0:
            gc.collect()
            torch.cuda.synchronize()
            allocated.append(torch.cuda.memory_allocated())
            reserved.append(torch.cuda.memory_reserved())
    print(
        f"\nsoak: {CALLS} forward + backward calls; allocated bytes at start {baseline}, every 1000 calls "
        f"{sorted(set(allocated))}; reserved {sorted(set(reserved))}"
    )
    assert all(a == baseline for a in allocated), f"allocated memory moved from {baseline}: {allocated}"
    assert len(set(reserved[1:])) == 1, f"reserved memory kept growing: {reserved}"
    for case, before in zip(cases, first, strict=False):
        after = step(*case)
        for name, a, b in zip(("y", "dx", "dweight", "dbias"), before, after, strict=False):
            assert torch.equal(a, b), f"{case[0]} {tuple(case[2].shape)} {case[2].dtype}: {name} changed"
