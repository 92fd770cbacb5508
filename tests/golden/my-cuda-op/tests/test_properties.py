"""Property-based tests (hypothesis): on any shape, layout, dtype and device, the op matches its
float64 reference, forward and backward, or raises a RuntimeError that says what is wrong (a dtype
without kernels, a device without kernels, a 0-d tensor for a row op); never a crash.

Shapes include 0 rows, width 1, odd and prime widths and widths over 65536; layouts include
transposed and strided views, expanded (stride 0) views and views at a storage offset (16-byte
aligned or not). Example counts: HYPOTHESIS_PROFILE=ci (the default: quick, for CPU-only
machines) or HYPOTHESIS_PROFILE=gpu (more examples and larger tensors, for a GPU machine).
"""

from __future__ import annotations

import math
import os

import pytest
import torch
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from support import CPU_IMPL, DTYPES, KERNEL, TOLERANCES, op, poison_allocator, raw_backward, reference

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
    """(device, dtype, shape, layout, storage offset, input std, scale, seed) of one call."""
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
    std = draw(st.sampled_from([0.1, 1.0, 3.0, 20.0]))
    scale = draw(st.sampled_from([1.0, 0.75, -1.5, 0.0, 3.0, 1e-3]))
    seed = draw(st.integers(0, 2**31 - 1))
    return device, dtype, shape, layout, offset, std, scale, seed


def make_input(shape, dtype, device, layout, offset, std, seed) -> torch.Tensor:
    """A tensor of this shape in the given memory layout, with values from the seed."""
    gen = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        values = (torch.randn(shape, generator=gen, dtype=torch.float64) * std).to(dtype)
    else:
        values = torch.randint(-5, 6, shape, generator=gen).to(dtype)
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


def expected_refusal(device, dtype, shape) -> str | None:
    """The reasons a call must be refused for (any of them), or None when it must run."""
    reasons = []
    if dtype not in DTYPES:
        reasons.append(NO_KERNELS_FOR_DTYPE)
    if device == "cpu" and not CPU_IMPL:
        reasons.append(NO_KERNELS_FOR_DEVICE)
    if KERNEL == "rowwise" and len(shape) == 0:
        reasons.append(NO_DIMENSIONS)
    return "|".join(reasons) or None


@given(calls())
# A case this test found: the rowwise CPU kernel, adding a float32 row of 65537 terms one after
# another in float, drifted 1e-4 from the exact sum (its row sums are kept in double since).
@example(("cpu", torch.float32, (1, 65537), "contiguous", 1, 3.0, -1.5, 1))
def test_matches_float64_reference_or_refuses(call):
    device, dtype, shape, layout, offset, std, scale, seed = call
    x = make_input(shape, dtype, device, layout, offset, std, seed)
    refusal = expected_refusal(device, dtype, shape)
    if refusal:
        with pytest.raises(RuntimeError, match=refusal):
            op(x, scale)
        return

    # The input itself, in its layout, is the leaf the gradient is taken for.
    x = x.detach().requires_grad_()
    poison_allocator(shape, dtype, device)
    y = op(x, scale)
    assert (y.shape, y.dtype, y.device) == (x.shape, x.dtype, x.device)
    x64 = x.detach().double().requires_grad_()
    y64 = reference(x64, scale)
    torch.testing.assert_close(y, y64.to(dtype), **TOLERANCES[dtype], msg=lambda m: f"forward, {call}: {m}")

    grad_out = make_input(shape, dtype, device, "contiguous", 0, 1.0, seed + 1)
    (grad_x,) = torch.autograd.grad(y, x, grad_out)
    (expected,) = torch.autograd.grad(y64, x64, grad_out.double())
    # The gradient is scale times values computed from the saved tensor in the input's dtype (as
    # torch's own ops do), so its rounding error grows with |scale|: so does the tolerance.
    grad_tolerance = {name: bound * max(1.0, abs(scale)) for name, bound in TOLERANCES[dtype].items()}
    torch.testing.assert_close(grad_x, expected.to(dtype), **grad_tolerance, msg=lambda m: f"backward, {call}: {m}")


SMALL_SHAPES = st.lists(st.integers(1, 9), min_size=1, max_size=3).map(tuple)


@given(
    device=st.sampled_from(DEVICES),
    dtype=st.sampled_from(DTYPES),
    shape=SMALL_SHAPES,
    other=SMALL_SHAPES,
    same=st.booleans(),
)
def test_backward_refuses_mismatched_inputs(device, dtype, shape, other, same):
    """The backward op checks its two inputs against each other before any kernel runs."""
    other = shape if same else other
    grad_out = torch.ones(other, dtype=dtype, device=device)
    saved = torch.ones(shape, dtype=dtype, device=device)
    if device == "cpu" and not CPU_IMPL:
        with pytest.raises(RuntimeError, match=NO_KERNELS_FOR_DEVICE):
            raw_backward(grad_out, saved, 1.0)
    elif shape != other:
        with pytest.raises(RuntimeError, match="they must have the same shape"):
            raw_backward(grad_out, saved, 1.0)
    else:
        assert raw_backward(grad_out, saved, 1.0).shape == shape
