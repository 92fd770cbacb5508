"""Property-based tests (hypothesis), for every op of the package: on any shape, layout, dtype, device
and declared scalar value, the op matches its float64 reference, forward and backward, or raises a
RuntimeError that says what is wrong (a dtype without kernels, a device without kernels, a 0-d
tensor for a row op); never a crash.

Shapes include 0 rows, width 1, odd and prime widths and widths over 65536; layouts include
transposed and strided views, expanded (stride 0) views and views at a storage offset (16-byte
aligned or not). The scalars are drawn from each one's declared default and examples. Example
counts: HYPOTHESIS_PROFILE=ci (the default: quick, for CPU-only machines) or HYPOTHESIS_PROFILE=gpu
(more examples and larger tensors, for a GPU machine).
"""

from __future__ import annotations

import math
import os

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import CPU_IMPL, DTYPES, OP_NAMES, OPS, check_backward, check_forward, function, poison_allocator

PROFILES = {
    # name: (examples per test, most elements in one tensor)
    "ci": (100, 1 << 18),
    "gpu": (500, 1 << 22),
}
for _name, (_examples, _) in PROFILES.items():
    settings.register_profile(
        _name,
        max_examples=_examples,
        deadline=None,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci") if os.environ.get("HYPOTHESIS_PROFILE") in PROFILES else "ci"
settings.load_profile(PROFILE)
MAX_ELEMENTS = PROFILES[PROFILE][1]

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
ALL_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int32, torch.int64]
# Widths at the kernels' edges: none, 1, a vector's width and one either side, primes, a block's
# width and one past it, and rows wider than 65536 elements; and any width up to 3000.
EDGE_WIDTHS = [0, 1, 2, 3, 4, 5, 7, 8, 9, 13, 31, 32, 33, 127, 255, 256, 257, 509, 1021, 1024, 1025]
EDGE_WIDTHS += [4093, 4099, 8191, 65537, 70001]
WIDTHS = st.one_of(st.sampled_from(EDGE_WIDTHS), st.integers(1, 3000))
LAYOUTS = ["contiguous", "offset", "transposed", "strided", "expanded"]
# Each dtype's refusal, and the device's and the row op's: a refused call must name its reason.
NO_KERNELS_FOR_DTYPE = r"has dtype .* but this build has kernels for"
NO_KERNELS_FOR_DEVICE = r"CUDA kernels only"
NO_DIMENSIONS = r"at least one dimension"


@st.composite
def calls(draw):
    """(op, device, dtype, shape, layout, storage offset, scalars, seed) of one call."""
    op = OPS[draw(st.sampled_from(OP_NAMES))]
    device = draw(st.sampled_from(DEVICES))
    # Mostly the dtypes with kernels; now and then one without, which must be refused.
    dtype = draw(st.sampled_from(DTYPES * 4 + ALL_DTYPES))
    if draw(st.sampled_from(range(16))) == 0:
        shape = ()
    else:
        width = draw(WIDTHS)
        lead = draw(st.lists(st.integers(1, 4), max_size=2))
        room = MAX_ELEMENTS // max(1, width * math.prod(lead))
        rows = draw(st.integers(0, 8) if draw(st.booleans()) else st.integers(1, max(1, min(room, 3000))))
        shape = (*lead, rows, width) if rows <= room else (*lead, width)
        if math.prod(shape) > MAX_ELEMENTS:
            shape = (width,)
    layout = draw(st.sampled_from(LAYOUTS if len(shape) >= 2 else ["contiguous", "offset", "strided"]))
    offset = draw(st.integers(1, 9))
    params = {s.name: draw(st.sampled_from((s.default, *s.examples))) for s in op.params}
    seed = draw(st.integers(0, 2**31 - 1))
    return op, device, dtype, shape, layout, offset, params, seed


def make_input(tensor, shape, dtype, device, layout, offset, seed) -> torch.Tensor:
    """A tensor of this shape in the given memory layout, with values of the input's domain from the seed."""
    gen = torch.Generator().manual_seed(seed)
    if not dtype.is_floating_point:
        values = torch.randint(-5, 6, shape, generator=gen).to(dtype)
    elif tensor.domain is None:
        values = (torch.randn(shape, generator=gen, dtype=torch.float64) * 3.0).to(dtype)
    else:
        low, high = tensor.domain
        values = (torch.rand(shape, generator=gen, dtype=torch.float64) * (high - low) + low).to(dtype)
    values = values.to(device)
    if layout == "offset":  # contiguous, `offset` elements into its storage: mostly not 16-byte aligned
        storage = torch.zeros(offset + values.numel(), dtype=dtype, device=device)
        x = storage[offset:].view(shape)
        x.copy_(values)
        return x
    if layout == "transposed":  # the last two dimensions swapped in memory
        return values.transpose(-1, -2).contiguous().transpose(-1, -2)
    if layout == "strided":  # every other element of a twice-as-wide tensor
        wide = torch.zeros((*shape[:-1], 2 * shape[-1]) if shape else (2,), dtype=dtype, device=device)
        view = wide[..., ::2] if shape else wide[:1].view(())
        view.copy_(values)
        return view
    if layout == "expanded":  # the first row repeated: stride 0 along the rows
        return values[..., :1, :].expand(shape) if shape[-2] else values
    return values


def expected_refusal(op, device, dtype, shape) -> str | None:
    """The reasons a call must be refused for (any of them), or None when it must run."""
    reasons = []
    if dtype not in DTYPES:
        reasons.append(NO_KERNELS_FOR_DTYPE)
    if device == "cpu" and not CPU_IMPL:
        reasons.append(NO_KERNELS_FOR_DEVICE)
    if op.kind == "rowwise" and len(shape) == 0:
        reasons.append(NO_DIMENSIONS)
    return "|".join(reasons) or None


@given(calls())
def test_matches_float64_reference_or_refuses(call):
    op, device, dtype, shape, layout, offset, params, seed = call
    inputs = [
        make_input(t, shape, dtype, device, layout, offset, seed + i)
        if not t.per_row  # one value per row (rowwise ops): contiguous, of x's shape without its last dimension
        else make_input(t, op.input_shape(t, torch.Size(shape)), dtype, device, "contiguous", 0, seed + i)
        for i, t in enumerate(op.inputs)
    ]
    refusal = expected_refusal(op, device, dtype, shape)
    if refusal:
        with pytest.raises(RuntimeError, match=refusal):
            function(op)(*inputs, **params)
        return
    poison_allocator(shape, dtype, device)
    check_forward(op, inputs, params)
    check_backward(op, inputs, params)
