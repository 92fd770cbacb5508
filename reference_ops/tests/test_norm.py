"""reference_ops.layer_norm / rms_norm against torch.nn.functional in float64.

Every test runs on the CPU; the same tests run on CUDA where a GPU is present.
"""

import pytest
import torch
import torch.nn.functional as F
from graph_recorder import GraphRecorder

import reference_ops

HAS_CUDA = torch.cuda.is_available()
requires_cuda = pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
DEVICES = ["cpu", pytest.param("cuda", marks=requires_cuda)]
DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]

# Tolerances against the float64 reference computed from the same (rounded) inputs:
# rel: ||out - ref|| / ||ref||; elementwise |out - ref| <= atol * max(1, max|ref|) + rtol * |ref|.
TOL = {
    torch.float64: dict(rel=1e-12, atol=1e-10, rtol=1e-10),
    torch.float32: dict(rel=1e-5, atol=5e-5, rtol=5e-5),
    torch.float16: dict(rel=2e-3, atol=4e-3, rtol=4e-3),
    torch.bfloat16: dict(rel=1e-2, atol=2e-2, rtol=2e-2),
}

LAYER_MODES = ["affine", "no_affine", "no_bias", "mixed"]
RMS_MODES = ["affine", "no_affine", "mixed"]


def assert_close(out, ref, dtype, what, relative=True, magnitude=1.0):
    """Error bound: atol times the largest of 1, |ref| and `magnitude` (the size of the terms a
    result is computed from, where they cancel), plus rtol times |ref|."""
    assert out.shape == ref.shape, f"{what}: shape {tuple(out.shape)} != {tuple(ref.shape)}"
    out = out.double()
    assert torch.isfinite(out).all(), f"{what}: non-finite values (unwritten or overflowed elements)"
    tol = TOL[dtype]
    if ref.numel() == 0:
        return
    err = (out - ref).abs()
    scale = max(1.0, magnitude, ref.abs().max().item())
    bound = tol["atol"] * scale + tol["rtol"] * ref.abs()
    worst = (err - bound).max().item()
    assert worst <= 0, f"{what}: max abs error {err.max().item():.3e} exceeds the {dtype} bound"
    if relative:
        rel = (err.norm() / ref.norm()).item()
        assert rel <= tol["rel"], f"{what}: relative error {rel:.3e} > {tol['rel']}"


def poison_allocator(device, nbytes_list):
    """Fill the CUDA caching allocator with NaN blocks of the outputs' sizes, then free them,
    so an output element the kernel never writes reads back as NaN."""
    if device != "cuda":
        return
    blocks = [torch.full(((n + 3) // 4,), float("nan"), device=device) for n in nbytes_list for _ in range(3)]
    del blocks


def make_inputs(op, mode, M, N, dtype, device, leading=None, gen=None):
    shape = (M, N) if leading is None else (*leading, N)
    x = (torch.randn(shape, dtype=torch.float32, device=device, generator=gen) * 1.5 + 2.0).to(dtype)
    pdtype = torch.float32 if mode == "mixed" and dtype in (torch.float16, torch.bfloat16) else dtype
    w = b = None
    if mode != "no_affine":
        w = (torch.randn(N, dtype=torch.float32, device=device, generator=gen) * 0.5 + 1.0).to(pdtype)
        if op == "layer_norm" and mode != "no_bias":
            b = torch.randn(N, dtype=torch.float32, device=device, generator=gen).to(pdtype)
    dy = torch.randn(shape, dtype=torch.float32, device=device, generator=gen).to(dtype)
    return x, w, b, dy


def ours(op, x, N, w, b, eps):
    if op == "layer_norm":
        return reference_ops.layer_norm(x, (N,), w, b, eps)
    return reference_ops.rms_norm(x, (N,), w, eps)


def reference(op, x, N, w, b, eps):
    if op == "layer_norm":
        return F.layer_norm(x, (N,), w, b, eps)
    return F.rms_norm(x, (N,), w, eps)


def forward_backward(fn, op, x, N, w, b, dy, eps):
    leaves = [t.detach().requires_grad_() if t is not None else None for t in (x, w, b)]
    y = fn(op, leaves[0], N, leaves[1], leaves[2], eps)
    wanted = [t for t in leaves if t is not None]
    grads = torch.autograd.grad(y, wanted, dy)
    it = iter(grads)
    return y.detach(), [next(it) if t is not None else None for t in leaves]


def check_against_reference(op, mode, M, N, dtype, device, eps=None, leading=None, fn=ours):
    """`fn` (like `ours`) forward and backward, and forward without a gradient, against float64."""
    if op == "layer_norm" and eps is None:
        eps = 1e-5
    x, w, b, dy = make_inputs(op, mode, M, N, dtype, device, leading)
    nbytes = x.numel() * x.element_size()
    poison_allocator(device, [nbytes, nbytes, N * 4, max(M, 1) * 4])
    y, grads = forward_backward(fn, op, x, N, w, b, dy, eps)
    with torch.no_grad():
        y_inference = fn(op, x, N, w, b, eps)
    if fn is ours:  # the inference op (no statistics written): the same y, bit for bit
        assert torch.equal(y_inference, y), "the inference op's y differs from the training forward's"
    ref_eps = eps if eps is not None else torch.finfo(dtype).eps
    d = lambda t: None if t is None else t.double()  # noqa: E731
    y_ref, grads_ref = forward_backward(reference, op, d(x), N, d(w), d(b), d(dy), ref_eps)
    assert y.dtype == dtype
    # With N == 1 the gradients are (near) zero differences of nearly equal terms: an
    # absolute bound only.
    assert_close(y, y_ref, dtype, "y", relative=N > 1)
    assert_close(y_inference, y_ref, dtype, "y without a gradient", relative=N > 1)
    # dx sums terms of size rstd * |dy * w| that cancel (exactly, when N == 1): its rounding error
    # scales with them, not with dx.
    x64 = x.double()
    centered = x64 - x64.mean(-1, keepdim=True) if op == "layer_norm" else x64
    rstd = (centered.pow(2).mean(-1, keepdim=True) + ref_eps).rsqrt()
    dx_terms = (rstd * dy.double() * (1.0 if w is None else w.double())).abs().max().item()
    for name, g, g_ref, t in zip(("dx", "dweight", "dbias"), grads, grads_ref, (x, w, b), strict=False):
        if t is None:
            continue
        assert g.dtype == t.dtype, f"{name} dtype {g.dtype} != {t.dtype}"
        assert_close(g, g_ref, dtype, name, relative=N > 1, magnitude=dx_terms if name == "dx" else 1.0)


def mode_dtype_pairs(modes):
    """Every (mode, dtype) that exists: "mixed" (float32 parameters) only with float16/bfloat16 x."""
    return [
        pytest.param(mode, dtype, id=f"{mode}-{dtype}")
        for mode in modes
        for dtype in DTYPES
        if mode != "mixed" or dtype in (torch.float16, torch.bfloat16)
    ]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("N", [1, 7, 760, 1023, 4104])
@pytest.mark.parametrize("M", [1, 199])
@pytest.mark.parametrize("mode, dtype", mode_dtype_pairs(LAYER_MODES))
def test_layer_norm_matches_functional(mode, dtype, M, N, device):
    check_against_reference("layer_norm", mode, M, N, dtype, device)


# Narrow rows, which the CUDA forward spreads over a thread group of fixed width (4 packs of 16
# bytes a thread on 8, 16 or 32 threads: N = 256 / 512 / 1024 for 16-bit types, 128 / 256 / 512 for
# float32, 64 / 128 / 256 for float64); 199 rows leave groups of the last CTA past the end.
@requires_cuda
@pytest.mark.parametrize("N", [64, 128, 256, 512, 1024])
@pytest.mark.parametrize("mode, dtype", mode_dtype_pairs(LAYER_MODES))
def test_layer_norm_fixed_groups(mode, dtype, N):
    check_against_reference("layer_norm", mode, 199, N, dtype, "cuda")


@requires_cuda
@pytest.mark.parametrize("N", [64, 128, 256, 512, 1024])
@pytest.mark.parametrize("mode, dtype", mode_dtype_pairs(RMS_MODES))
def test_rms_norm_fixed_groups(mode, dtype, N):
    check_against_reference("rms_norm", mode, 199, N, dtype, "cuda")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("N", [1, 7, 760, 1023, 4104])
@pytest.mark.parametrize("M", [1, 199])
@pytest.mark.parametrize("mode, dtype", mode_dtype_pairs(RMS_MODES))
def test_rms_norm_matches_functional(mode, dtype, M, N, device):
    check_against_reference("rms_norm", mode, M, N, dtype, device, eps=None)


# Wide rows, many rows and odd widths: every kernel of the dispatch (staged rows, one CTA or a
# cluster per row, several rows per cluster; register rows; row spans of odd widths) on each device.
WIDE_SHAPES = [
    (3, 8200),
    (5, 16384),
    (64, 32768),
    (257, 32768),
    (2, 65536),
    (3, 65537),
    (2, 131072),
    (20000, 64),
    (3000, 1024),
    # Odd widths (row spans): many rows per persistent CTA, tiny rows, and wide rows over clusters.
    (4000, 1023),
    (20000, 65),
    (257, 32769),
]


# float64 only where the shape is small enough for it to stay quick; the smaller shapes cover it.
WIDE_CASES = [
    pytest.param(shape, dtype, id=f"{shape[0]}x{shape[1]}-{dtype}")
    for shape in WIDE_SHAPES
    for dtype in (torch.float32, torch.bfloat16, torch.float64)
    if dtype != torch.float64 or shape[0] * shape[1] <= 2_000_000
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape, dtype", WIDE_CASES)
@pytest.mark.parametrize("op", ["layer_norm", "rms_norm"])
def test_wide_and_tall_shapes(op, shape, dtype, device):
    check_against_reference(op, "affine", shape[0], shape[1], dtype, device)


# Every parameter mode on wide rows, where the forward's layout depends on the parameters: N = 16384
# is one CTA per row (4 packs a thread); N = 32768 one CTA of 8 packs a thread (16-bit: every slot
# in the row, the unbounded kernel for 16-bit LayerNorm); at N = 65536 LayerNorm with weight and
# bias splits each row over a cluster of small slices while the other modes keep one CTA per row
# (16-bit) or a cluster of larger slices (fp32). More rows than one wave of CTAs on the GPU.
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(300, 16384), (140, 32768), (140, 65536)], ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize(
    "op, mode, dtype",
    [
        pytest.param(op, *p.values, id=f"{op}-{p.id}")
        for op, modes in (("layer_norm", LAYER_MODES), ("rms_norm", RMS_MODES))
        for p in mode_dtype_pairs(modes)
        if p.values[1] != torch.float64
    ],
)
def test_wide_rows_every_mode(op, mode, dtype, shape, device):
    check_against_reference(op, mode, shape[0], shape[1], dtype, device)


# The forward stores y plainly when x and y together overflow the L2, evict-first otherwise
# (norm_fwd.cu): the same row layout on both sides of the line, every forward kernel family (fixed
# groups, bounded rows, 8-pack rows, cluster slices), forward and backward checked on whole tensors.
@requires_cuda
@pytest.mark.parametrize("side", ["fits", "overflows"])
@pytest.mark.parametrize("N", [512, 4096, 32768, 65536])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("op", ["layer_norm", "rms_norm"])
def test_forward_on_both_sides_of_the_l2_size(op, dtype, N, side):
    row_bytes = 2 * N * torch.finfo(dtype).bits // 8  # x and y
    M = torch.cuda.get_device_properties(0).L2_cache_size // row_bytes + (side == "overflows")
    check_against_reference(op, "affine", M, N, dtype, "cuda")


# LayerNorm rows far from zero: x = offset + scale * randn, with offset^2 / scale^2 about 4e3
# (float32) or 2.6e5 (float16). Statistics from float sums of x and x^2 lose enough of the
# variance to cancellation to fail here (y off by 3e-3 to 6e-3 in float32, 0.1 to 0.3 in
# float16); the kernels' two-pass sums and their one-reduction form (every thread's sum and M2
# about its own mean, combined pairwise) must not. Widths cover each forward path: fixed groups
# (512), bounded rows (4096), spans (1023), 8-pack rows (16-bit 32768), cluster slices (65536).
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("N", [512, 1023, 4096, 32768, 65536])
@pytest.mark.parametrize(
    "dtype, offset, scale", [(torch.float32, 64.0, 1.0), (torch.float16, 2048.0, 4.0)], ids=["float32", "float16"]
)
def test_layer_norm_rows_far_from_zero(dtype, offset, scale, N, device):
    gen = torch.Generator(device=device).manual_seed(N)
    M = 24
    x = (torch.randn(M, N, device=device, generator=gen) * scale + offset).to(dtype)
    w = (torch.randn(N, device=device, generator=gen) * 0.5 + 1.0).to(dtype)
    b = torch.randn(N, device=device, generator=gen).to(dtype)
    dy = torch.randn(M, N, device=device, generator=gen).to(dtype)
    y, (dx, _, _) = forward_backward(ours, "layer_norm", x, N, w, b, dy, 1e-5)
    d = lambda t: t.double()  # noqa: E731
    y_ref, (dx_ref, _, _) = forward_backward(reference, "layer_norm", d(x), N, d(w), d(b), d(dy), 1e-5)
    assert_close(y, y_ref, dtype, "y")
    x64 = x.double()
    rstd = ((x64 - x64.mean(-1, keepdim=True)).pow(2).mean(-1, keepdim=True) + 1e-5).rsqrt()
    assert_close(dx, dx_ref, dtype, "dx", magnitude=(rstd * dy.double() * w.double()).abs().max().item())


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", ["layer_norm", "rms_norm"])
def test_multi_dim_normalized_shape_and_eps(op, device):
    x = torch.randn(2, 3, 4, 40, device=device, dtype=torch.float64)
    w = torch.randn(4, 40, device=device, dtype=torch.float64)
    if op == "layer_norm":
        b = torch.randn(4, 40, device=device, dtype=torch.float64)
        y = reference_ops.layer_norm(x, (4, 40), w, b, eps=0.5)
        ref = F.layer_norm(x, (4, 40), w, b, eps=0.5)
    else:
        y = reference_ops.rms_norm(x, [4, 40], w, eps=0.5)
        ref = F.rms_norm(x, [4, 40], w, eps=0.5)
    assert_close(y, ref, torch.float64, "y")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", ["layer_norm", "rms_norm"])
def test_misaligned_and_non_contiguous(op, device):
    M, N = 33, 1024
    base = torch.randn(M * N + 1, device=device, dtype=torch.bfloat16)
    x_misaligned = base[1:].view(M, N)  # contiguous, data pointer 2 bytes off 16-byte alignment
    wbase = torch.randn(N + 1, device=device, dtype=torch.bfloat16)
    w = wbase[1:]
    x_strided = torch.randn(N, M, device=device, dtype=torch.bfloat16).t()
    for x in (x_misaligned, x_strided):
        assert not (x.is_contiguous() and x.data_ptr() % 16 == 0)
        check = lambda t: t.double()  # noqa: E731
        y, grads = forward_backward(ours, op, x, N, w, None, torch.randn_like(x), 1e-5)
        dy = torch.randn_like(x)
        y, grads = forward_backward(ours, op, x, N, w, None, dy, 1e-5)
        y_ref, grads_ref = forward_backward(reference, op, check(x), N, check(w), None, check(dy), 1e-5)
        assert_close(y, y_ref, torch.bfloat16, "y")
        assert_close(grads[0], grads_ref[0], torch.bfloat16, "dx")
        assert_close(grads[1], grads_ref[1], torch.bfloat16, "dweight")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", ["layer_norm", "rms_norm"])
def test_zero_rows(op, device):
    N = 48
    x = torch.randn(0, 5, N, device=device, requires_grad=True)
    w = torch.randn(N, device=device, requires_grad=True)
    b = torch.randn(N, device=device, requires_grad=True) if op == "layer_norm" else None
    y = ours(op, x, N, w, b, 1e-5)
    assert y.shape == x.shape
    params = [t for t in (x, w, b) if t is not None]
    grads = torch.autograd.grad(y.sum() + sum(p.sum() for p in params[1:]), params)
    assert grads[0].shape == x.shape
    for g in grads[1:]:
        assert torch.equal(g, torch.ones_like(g)), "dweight / dbias of zero rows must be exactly 0 (+1 from p.sum())"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", ["layer_norm", "rms_norm"])
def test_gradcheck_float64(op, device):
    for M, N in ((3, 7), (2, 1030)):
        x = torch.randn(M, N, device=device, dtype=torch.float64, requires_grad=True)
        w = torch.randn(N, device=device, dtype=torch.float64, requires_grad=True)
        if op == "layer_norm":
            b = torch.randn(N, device=device, dtype=torch.float64, requires_grad=True)
            fn = lambda x, w, b, N=N: reference_ops.layer_norm(x, (N,), w, b)  # noqa: E731
            assert torch.autograd.gradcheck(fn, (x, w, b))
        else:
            fn = lambda x, w, N=N: reference_ops.rms_norm(x, (N,), w)  # noqa: E731
            assert torch.autograd.gradcheck(fn, (x, w))


def opcheck_samples(device):
    for rg in (False, True):
        for with_params in (True, False):
            x = torch.randn(4, 3, 40, device=device, requires_grad=rg)
            w = torch.randn(40, device=device, requires_grad=rg) if with_params else None
            b = torch.randn(40, device=device, requires_grad=rg) if with_params else None
            yield x, w, b


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    ops = torch.ops.reference_ops
    for x, w, b in opcheck_samples(device):
        torch.library.opcheck(ops.layer_norm_fwd.default, (x, [40], w, b, 1e-5))
        torch.library.opcheck(ops.rms_norm_fwd.default, (x, [40], w, 1e-6))
        with torch.no_grad():
            _, mean, rstd = ops.layer_norm_fwd(x, [40], w, b, 1e-5)
            _, rms_rstd = ops.rms_norm_fwd(x, [40], w, 1e-6)
        dy = torch.randn(x.shape, device=device)
        xd = x.detach()
        wd = None if w is None else w.detach()
        bd = None if b is None else b.detach()
        torch.library.opcheck(ops.layer_norm_bwd.default, (dy, xd, mean, rstd, [40], wd, bd))
        torch.library.opcheck(ops.rms_norm_bwd.default, (dy, xd, rms_rstd, [40], wd))
        torch.library.opcheck(ops.layer_norm_inference.default, (xd, [40], wd, bd, 1e-5))
        torch.library.opcheck(ops.rms_norm_inference.default, (xd, [40], wd, 1e-6))


@pytest.mark.parametrize("device", DEVICES)
def test_inference_op_has_no_backward(device):
    x = torch.randn(4, 40, device=device, requires_grad=True)
    y = torch.ops.reference_ops.layer_norm_inference(x, [40], None, None, 1e-5)
    with pytest.raises(RuntimeError, match="save no statistics and have no backward"):
        y.sum().backward()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", ["layer_norm", "rms_norm"])
def test_torch_compile_fullgraph(op, device, compiled_path):
    N = 256

    def f(x, w, b):
        y = ours(op, x.sin(), N, w, b, 1e-5)
        return (y * y).sum()

    x = torch.randn(8, N, device=device, requires_grad=True)
    w = torch.randn(N, device=device, requires_grad=True)
    b = torch.randn(N, device=device, requires_grad=True) if op == "layer_norm" else None
    params = [t for t in (x, w, b) if t is not None]
    compiled = torch.compile(f, fullgraph=True)
    loss_c = compiled(x, w, b)
    grads_c = torch.autograd.grad(loss_c, params)
    loss_e = f(x, w, b)
    grads_e = torch.autograd.grad(loss_e, params)
    torch.testing.assert_close(loss_c, loss_e, rtol=1e-5, atol=1e-5)
    for gc, ge in zip(grads_c, grads_e, strict=False):
        torch.testing.assert_close(gc, ge, rtol=1e-4, atol=1e-4)


def test_compiled_graph_contains_the_custom_ops(kernels_when_compiled):
    """With keep_kernels_when_compiled(True) the custom ops stay opaque in the compiled graphs
    (forward and backward)."""
    graphs = GraphRecorder()
    backend = graphs.backend
    torch._dynamo.reset()
    x = torch.randn(4, 64, requires_grad=True)
    w = torch.randn(64, requires_grad=True)
    f = torch.compile(lambda x, w: reference_ops.layer_norm(x, (64,), w).sum(), backend=backend, fullgraph=True)
    f(x, w).backward()
    assert "reference_ops.layer_norm_fwd.default" in graphs.forward, graphs
    assert "reference_ops.layer_norm_bwd.default" in graphs.backward, graphs
    graphs.clear()
    torch._dynamo.reset()
    with torch.no_grad():
        f(x, w)
    assert "reference_ops.layer_norm_inference.default" in graphs.forward, graphs


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("shape", [(4096, 1024), (64, 32768), (2000, 4095)], ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("op", ["layer_norm", "rms_norm"])
def test_backward_is_deterministic(op, shape, dtype, device):
    M, N = shape
    if device == "cpu":
        M = min(M, 512)
    x, w, b, dy = make_inputs(op, "affine", M, N, dtype, device)
    _, first = forward_backward(ours, op, x, N, w, b, dy, 1e-5)
    _, second = forward_backward(ours, op, x, N, w, b, dy, 1e-5)
    for name, g1, g2 in zip(("dx", "dweight", "dbias"), first, second, strict=False):
        if g1 is not None:
            assert torch.equal(g1, g2), f"{name} differs between two identical backward passes"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize(
    "shape", [(64, 7), (199, 1023), (2000, 4095), (600, 8191), (4096, 1024)], ids=lambda s: f"{s[0]}x{s[1]}"
)
@pytest.mark.parametrize("op", ["layer_norm", "rms_norm"])
def test_rows_are_independent(op, shape, dtype, device):
    """Rows of odd width share 16-byte packs with their neighbours: an inf in one row's x and a
    NaN in the next row's dy must leave every other row's y and dx finite and exact."""
    M, N = shape
    if device == "cpu":
        M = min(M, 256)
    x, w, b, dy = make_inputs(op, "affine", M, N, dtype, device)
    bad = [M // 2, M // 2 + 1]
    x[bad[0], :: max(N // 3, 1)] = float("inf")
    dy[bad[1], -1] = float("nan")
    y, (dx, _, _) = forward_backward(ours, op, x, N, w, b, dy, 1e-5)
    d = lambda t: None if t is None else t.double()  # noqa: E731
    y_ref, (dx_ref, _, _) = forward_backward(reference, op, d(x), N, d(w), d(b), d(dy), 1e-5)
    keep = torch.ones(M, dtype=torch.bool, device=device)
    keep[bad] = False
    assert_close(y[keep], y_ref[keep], dtype, "y of the clean rows")
    # >= rstd * |dy * w| of the clean rows for these inputs (rstd < 1)
    dx_terms = (dy[keep].double() * w.double()).abs().max().item()
    assert_close(dx[keep], dx_ref[keep], dtype, "dx of the clean rows", magnitude=dx_terms)


@requires_cuda
@pytest.mark.parametrize("N", [1024, 65536])
@pytest.mark.parametrize("op", ["layer_norm", "rms_norm"])
def test_cuda_graph_capture(op, N):
    M = 64
    x, w, b, dy = make_inputs(op, "affine", M, N, torch.bfloat16, "cuda")
    leaves = [t.detach().requires_grad_() if t is not None else None for t in (x, w, b)]
    wanted = [t for t in leaves if t is not None]
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            y = ours(op, leaves[0], N, leaves[1], leaves[2], 1e-5)
            torch.autograd.grad(y, wanted, dy)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y_static = ours(op, leaves[0], N, leaves[1], leaves[2], 1e-5)
        grads_static = torch.autograd.grad(y_static, wanted, dy)
    for _ in range(2):
        new = make_inputs(op, "affine", M, N, torch.bfloat16, "cuda")
        with torch.no_grad():
            for dst, src in zip(leaves + [dy], list(new[:3]) + [new[3]], strict=False):
                if dst is not None:
                    dst.copy_(src)
        graph.replay()
        y_eager, grads_eager = forward_backward(ours, op, new[0], N, new[1], new[2], new[3], 1e-5)
        assert torch.equal(y_static, y_eager)
        for gs, ge in zip(grads_static, [g for g in grads_eager if g is not None], strict=False):
            assert torch.equal(gs, ge)


@requires_cuda
@pytest.mark.parametrize("op", ["layer_norm", "rms_norm"])
def test_runs_on_the_current_stream(op):
    """Work on a side stream: if a kernel ran on another stream it would read x before
    the side stream's delayed copy wrote it."""
    M, N = 512, 4096
    x_old, w, b, dy = make_inputs(op, "affine", M, N, torch.float32, "cuda")
    x_new = torch.randn_like(x_old)
    expected, expected_grads = forward_backward(ours, op, x_new, N, w, b, dy, 1e-5)
    x = x_old.clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(50_000_000)
        x.copy_(x_new)
        y, grads = forward_backward(ours, op, x, N, w, b, dy, 1e-5)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    assert torch.equal(y, expected)
    for g, ge in zip(grads, expected_grads, strict=False):
        if g is not None:
            assert torch.equal(g, ge)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kind", ["layer", "layer_no_bias", "layer_no_affine", "rms", "rms_eps", "rms_no_affine"])
def test_module_drop_in(kind, device):
    shape = (3, 64)
    if kind.startswith("layer"):
        kwargs = dict(eps=1e-6, elementwise_affine=kind != "layer_no_affine", bias=kind != "layer_no_bias")
        ref, mine = torch.nn.LayerNorm(shape, **kwargs), reference_ops.LayerNorm(shape, **kwargs)
    else:
        kwargs = dict(eps=1e-4 if kind == "rms_eps" else None, elementwise_affine=kind != "rms_no_affine")
        ref, mine = torch.nn.RMSNorm(shape, **kwargs), reference_ops.RMSNorm(shape, **kwargs)
    ref, mine = ref.to(device), mine.to(device)
    with torch.no_grad():
        for p in ref.parameters():
            p.copy_(torch.randn_like(p))
    assert list(mine.state_dict().keys()) == list(ref.state_dict().keys())
    mine.load_state_dict(ref.state_dict(), strict=True)
    x = torch.randn(2, 5, *shape, device=device)
    dy = torch.randn_like(x)
    outs = []
    for module in (ref, mine):
        xi = x.clone().requires_grad_()
        y = module(xi)
        params = list(module.parameters())
        grads = torch.autograd.grad(y, [xi] + params, dy)
        outs.append((y, grads))
    (y_ref, g_ref), (y_mine, g_mine) = outs
    torch.testing.assert_close(y_mine, y_ref, rtol=1e-5, atol=1e-5)
    assert len(g_mine) == len(g_ref)
    for gm, gr in zip(g_mine, g_ref, strict=False):
        torch.testing.assert_close(gm, gr, rtol=1e-4, atol=1e-4)


def test_module_constructor_matches_torch_nn():
    m = reference_ops.LayerNorm(16, dtype=torch.bfloat16, bias=False)
    assert m.weight.dtype == torch.bfloat16 and m.bias is None
    assert torch.equal(m.weight, torch.ones(16, dtype=torch.bfloat16))
    r = reference_ops.RMSNorm([4, 8], elementwise_affine=False)
    assert r.weight is None and r.normalized_shape == (4, 8)


@pytest.mark.parametrize("device", DEVICES)
def test_clear_errors(device):
    x = torch.randn(4, 32, device=device)
    with pytest.raises(RuntimeError, match="must be float32, float16, bfloat16 or float64"):
        reference_ops.layer_norm(torch.ones(4, 32, dtype=torch.int32, device=device), (32,))
    with pytest.raises(RuntimeError, match="must equal the trailing dimensions of x"):
        reference_ops.layer_norm(x, (16,))
    with pytest.raises(RuntimeError, match="weight must have shape"):
        reference_ops.rms_norm(x, (32,), torch.randn(16, device=device))
    with pytest.raises(RuntimeError, match="weight has dtype Half but x has dtype BFloat16"):
        reference_ops.layer_norm(x.bfloat16(), (32,), torch.randn(32, device=device).half())
    with pytest.raises(RuntimeError, match="weight .* and bias .* must have the same dtype"):
        reference_ops.layer_norm(
            x.bfloat16(), (32,), torch.randn(32, device=device), torch.randn(32, device=device).bfloat16()
        )
    with pytest.raises(RuntimeError, match="must name at least one trailing dimension"):
        reference_ops.layer_norm(x, ())


@requires_cuda
def test_clear_error_for_wrong_device():
    x = torch.randn(4, 32, device="cuda")
    with pytest.raises(RuntimeError, match="weight is on cpu but x is on cuda"):
        reference_ops.layer_norm(x, (32,), torch.randn(32))
    with pytest.raises(RuntimeError, match="bias is on cuda:0 but x is on cpu"):
        reference_ops.layer_norm(x.cpu(), (32,), None, torch.randn(32, device="cuda"))
