"""Soak: 10,000 forward + backward calls of each op at mixed shapes and dtypes on a GPU. The memory allocated
returns to the same figure after every call (nothing leaks), and the same inputs give the same
results, bit for bit, at the end as at the start."""

from __future__ import annotations

import gc

import pytest
import torch
from support import DTYPES, OP_NAMES, OPS, as_tuple, function, grads_of, random_inputs, requires_cuda, scalars

CALLS = 10_000
SHAPES = [(7,), (199, 760), (2, 1025), (64, 4099), (2053, 1031), (8, 65537)]


def step(op, inputs, grad_outputs) -> tuple[torch.Tensor, ...]:
    leaves = [x.detach().requires_grad_(t.grad) for x, t in zip(inputs, op.inputs, strict=True)]
    outputs = as_tuple(function(op)(*leaves, **scalars(op)))
    grads = grads_of(op, outputs, leaves, grad_outputs)
    return tuple(o.detach() for o in outputs) + tuple(grads)


@requires_cuda
@pytest.mark.parametrize("op_name", OP_NAMES)
def test_soak_memory_flat_and_results_unchanged(op_name):
    op = OPS[op_name]
    cases = []
    for i, shape in enumerate(SHAPES):
        dtype = DTYPES[i % len(DTYPES)]
        inputs = random_inputs(op, shape, dtype, "cuda")
        outputs = as_tuple(function(op)(*inputs, **scalars(op)))
        cases.append((inputs, [torch.randn_like(o) for o in outputs]))
    first = [step(op, *case) for case in cases]
    # Readings after gc.collect(): a tensor held by a reference cycle is freed by Python's cycle
    # collector at a time of its choosing, not when the call returns.
    gc.collect()
    torch.cuda.synchronize()
    baseline = torch.cuda.memory_allocated()
    allocated = []
    for i in range(CALLS):
        step(op, *cases[i % len(cases)])
        if (i + 1) % 1000 == 0:
            gc.collect()
            torch.cuda.synchronize()
            allocated.append(torch.cuda.memory_allocated())
    print(f"\nsoak: {CALLS} calls; allocated bytes at start {baseline}, every 1000 calls {sorted(set(allocated))}")
    assert all(a == baseline for a in allocated), f"allocated memory moved from {baseline}: {allocated}"
    for (inputs, grad_outputs), before in zip(cases, first, strict=True):
        after = step(op, inputs, grad_outputs)
        x = inputs[0]
        for b, a in zip(before, after, strict=True):
            assert torch.equal(b, a), f"{tuple(x.shape)} {x.dtype}: a result changed"
