"""Property-based tests (hypothesis): on any shape, layout, dtype, device and parameter presence,
layer_norm / rms_norm match float64 torch.nn.functional, forward and backward, or raise a clear
error; never a crash, a hang or an illegal memory access.

Example counts: HYPOTHESIS_PROFILE=ci (default, CPU-only machines), or =gpu for more examples.
"""

from __future__ import annotations

import os

import pytest
import torch
import torch.nn.functional as F
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_norm import assert_close

import reference_ops

settings.register_profile(
    "ci", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
settings.register_profile(
    "gpu", max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
# Widths around every kernel's boundaries: 1, primes, odd widths, pack multiples, > 64K.
WIDTHS = st.one_of(
    st.sampled_from([1, 2, 3, 5, 7, 8, 13, 31, 64, 127, 509, 512, 760, 1021, 1024, 4093, 4096, 8191, 65537, 70001]),
    st.integers(1, 5000),
)
MAX_ELEMENTS = 1 << 20


@st.composite
def norm_calls(draw):
    op = draw(st.sampled_from(["layer_norm", "rms_norm"]))
    dtype = draw(st.sampled_from([torch.float32, torch.float16, torch.bfloat16, torch.float64]))
    device = draw(st.sampled_from(DEVICES))
    N = draw(WIDTHS)
    M = draw(st.one_of(st.just(0), st.integers(1, 8), st.integers(9, max(9, min(600, MAX_ELEMENTS // N)))))
    layout = draw(st.sampled_from(["contiguous", "offset", "transposed", "sliced", "leading"]))
    offset = draw(st.integers(1, 9))
    params = draw(st.sampled_from(["none", "weight", "weight_bias", "float32"]))
    seed = draw(st.integers(0, 2**31 - 1))
    return op, dtype, device, M, N, layout, offset, params, seed


def make_x(M, N, dtype, device, layout, offset, gen):
    values = torch.randn(M, N, generator=gen) * 2.0 + 0.5
    if layout == "offset":
        # Contiguous, starting `offset` elements into its storage (aligned or not).
        storage = torch.empty(offset + M * N, dtype=dtype, device=device)
        x = storage[offset:].view(M, N)
        x.copy_(values)
        return x
    if layout == "transposed":
        transposed = values.t().contiguous().t() if M else values
        return transposed.to(dtype=dtype, device=device)
    if layout == "sliced":
        # Every other column of a wider tensor: a row stride of 2N, an element stride of 2.
        wide = torch.randn(M, 2 * N, generator=gen).to(dtype=dtype, device=device)
        wide[:, ::2] = values.to(dtype=dtype, device=device)
        return wide[:, ::2]
    if layout == "leading":
        return values.to(dtype=dtype, device=device).view(1, M, N) if M else values.to(dtype=dtype, device=device)
    return values.to(dtype=dtype, device=device)


@given(norm_calls())
def test_matches_float64_reference(call):
    op, dtype, device, M, N, layout, offset, params, seed = call
    gen = torch.Generator().manual_seed(seed)
    x = make_x(M, N, dtype, device, layout, offset, gen).requires_grad_()
    pdtype = torch.float32 if params == "float32" and dtype in (torch.float16, torch.bfloat16) else dtype
    w = b = None
    if params != "none":
        w = (torch.randn(N, generator=gen) * 0.5 + 1.0).to(dtype=pdtype, device=device).requires_grad_()
    if params in ("weight_bias", "float32") and op == "layer_norm":
        b = torch.randn(N, generator=gen).to(dtype=pdtype, device=device).requires_grad_()
    dy = torch.randn(x.shape, generator=gen).to(dtype=dtype, device=device)
    eps = 1e-5

    def run(module, xs, ws, bs):
        if op == "layer_norm":
            return module.layer_norm(xs, (N,), ws, bs, eps)
        return module.rms_norm(xs, (N,), ws, eps)

    y = run(reference_ops, x, w, b)
    leaves = [t for t in (x, w, b) if t is not None]
    grads = torch.autograd.grad(y, leaves, dy)
    with torch.no_grad():
        y_inference = run(reference_ops, x, w, b)

    d = lambda t: None if t is None else t.detach().double().cpu().requires_grad_()  # noqa: E731
    x64, w64, b64 = d(x), d(w), d(b)
    y64 = run(F, x64, w64, b64)
    grads64 = torch.autograd.grad(y64, [t for t in (x64, w64, b64) if t is not None], dy.double().cpu())

    assert y.shape == x.shape and y.dtype == dtype and y.device == x.device
    assert torch.equal(y_inference, y), "the inference op's y differs from the training forward's"
    assert_close(y.detach().cpu(), y64.detach(), dtype, "y", relative=N > 1)
    x_c = x64.detach() - (x64.detach().mean(-1, keepdim=True) if op == "layer_norm" else 0)
    rstd = (x_c.pow(2).mean(-1, keepdim=True) + eps).rsqrt()
    dx_terms = (rstd * dy.double().cpu() * (1.0 if w is None else w64.detach())).abs().max().item() if M else 1.0
    # LayerNorm's dx cancels to rounding level at N <= 2 (xhat = +-1), RMSNorm's at N = 1: there an
    # absolute bound only, scaled by the terms that cancel.
    dx_relative = N > (2 if op == "layer_norm" else 1)
    for name, g, g64, leaf in zip(("dx", "dweight", "dbias"), grads, grads64, leaves, strict=False):
        assert g.dtype == leaf.dtype and g.shape == leaf.shape, name
        # dweight / dbias add M rows' products: their rounding grows with the rows.
        assert_close(
            g.cpu(),
            g64,
            dtype,
            name,
            relative=M > 0 and (dx_relative if name == "dx" else N > 1),
            magnitude=dx_terms if name == "dx" else float(max(M, 1)) ** 0.5,
        )


@st.composite
def bad_calls(draw):
    device = draw(st.sampled_from(DEVICES))
    N = draw(st.integers(1, 300))
    kind = draw(st.sampled_from(["weight_length", "int_dtype", "shape", "param_dtype", "empty_shape"]))
    return device, N, kind


BAD_MESSAGES = {
    "weight_length": "weight must have shape",
    "int_dtype": "must be float32, float16, bfloat16 or float64",
    "shape": "must equal the trailing dimensions of x",
    "param_dtype": "weight has dtype Half but x has dtype BFloat16",
    "empty_shape": "must name at least one trailing dimension",
}


@given(bad_calls())
def test_bad_input_gets_a_clear_error(call):
    device, N, kind = call
    x = torch.randn(3, N, device=device)
    with pytest.raises(RuntimeError, match=BAD_MESSAGES[kind]):
        if kind == "weight_length":
            reference_ops.rms_norm(x, (N,), torch.randn(N + 1, device=device))
        elif kind == "int_dtype":
            reference_ops.layer_norm(torch.ones(3, N, dtype=torch.int32, device=device), (N,))
        elif kind == "shape":
            reference_ops.layer_norm(x, (N + 1,))
        elif kind == "param_dtype":
            reference_ops.layer_norm(x.bfloat16(), (N,), torch.randn(N, device=device).half())
        else:
            reference_ops.layer_norm(x, ())
    if device == "cuda":
        torch.cuda.synchronize()  # an illegal access in the failed call would surface here
