"""The fused residual ops add_layer_norm / add_rms_norm: (y, h) = (norm(x + residual), x + residual).

Checked against a float64 reference computed from the h the op returns (h itself must equal
torch's x + residual bit for bit), forward and backward (gradients of x, residual, weight and bias
from gradients arriving at y and at h), for every dtype pair (x's dtype, or a float32 residual
stream beside a 16-bit x), on shapes the fused CUDA kernels take and on shapes they hand back to
the add + norm path; then autograd's plumbing (which ops run, unused outputs), gradcheck, opcheck,
torch.compile, autocast, the modules and the errors. CPU always; CUDA where a GPU is present.
"""

import pytest
import torch
import torch.nn.functional as F
from test_norm import assert_close

import reference_ops

HAS_CUDA = torch.cuda.is_available()
requires_cuda = pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
DEVICES = ["cpu", pytest.param("cuda", marks=requires_cuda)]
OPS = ["layer_norm", "rms_norm"]
ops = torch.ops.reference_ops

# (x dtype, residual dtype): the residual's dtype is x's, or float32 beside a 16-bit x.
DTYPE_PAIRS = [
    (torch.float32, torch.float32),
    (torch.bfloat16, torch.bfloat16),
    (torch.float16, torch.float16),
    (torch.float64, torch.float64),
    (torch.bfloat16, torch.float32),
    (torch.float16, torch.float32),
]
PAIR_IDS = [f"{str(a)[6:]}+{str(b)[6:]}" for a, b in DTYPE_PAIRS]
# Widths the fused kernels take (multiples of the pack, up to their registers; 8192: the backward's
# two packs a thread of a 16-bit stream, four of float32), and ones they hand back: not a multiple
# of any pack, and wider than 1024 threads x 16 floats.
FUSED_N = [8, 512, 1024, 4096, 8192]
FALLBACK_N = [1001, 32768]


def make(op, M, N, x_dtype, r_dtype, device, params="affine", seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(M, N, generator=g).to(device=device, dtype=x_dtype)
    r = (torch.randn(M, N, generator=g) * 2 + 0.5).to(device=device, dtype=r_dtype)
    p_dtype = r_dtype if params != "float32" else torch.float32
    w = (torch.randn(N, generator=g) * 0.5 + 1).to(device=device, dtype=p_dtype) if params != "none" else None
    b = (
        torch.randn(N, generator=g).to(device=device, dtype=p_dtype)
        if params != "none" and op == "layer_norm"
        else None
    )
    return x, r, w, b


def ours(op, x, r, N, w, b, eps=1e-5, out_dtype=None):
    if op == "layer_norm":
        return reference_ops.add_layer_norm(x, r, (N,), w, b, eps, out_dtype=out_dtype)
    return reference_ops.add_rms_norm(x, r, (N,), w, eps, out_dtype=out_dtype)


def norm64(op, h, N, w, b, eps=1e-5):
    w = None if w is None else w.double()
    b = None if b is None else b.double()
    if op == "layer_norm":
        return F.layer_norm(h, (N,), w, b, eps)
    return F.rms_norm(h, (N,), w, eps)


def fused_kernels_ran(fn, full_names=False):
    """Names of the fused residual kernels a CUDA call launched (with their template arguments:
    `full_names`)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    names = {e.name[e.name.index("add_norm_") :] for e in prof.events() if "add_norm_" in e.name}
    return {n.split(">(")[0] + ">" if full_names else n.split("<")[0] for n in names}


# -----------------------------------------------------------------------------
# Forward and backward against float64
# -----------------------------------------------------------------------------


# (x dtype, residual dtype, out_dtype): y in the residual's dtype for every pair, and in x's beside a
# float32 stream (out_dtype=x.dtype, as the fused modules give it under autocast).
OUT_CASES = [(*p, None) for p in DTYPE_PAIRS] + [(*p, p[0]) for p in DTYPE_PAIRS if p[0] != p[1]]
OUT_IDS = PAIR_IDS + [f"{i}-y_{str(p[0])[6:]}" for i, p in zip(PAIR_IDS, DTYPE_PAIRS, strict=True) if p[0] != p[1]]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", OUT_CASES, ids=OUT_IDS)
@pytest.mark.parametrize("N", FUSED_N + FALLBACK_N)
@pytest.mark.parametrize("op", OPS)
def test_matches_float64_reference(op, N, case, device):
    M = 37 if N <= 8192 else 3
    check_float64(op, M, N, case, device)


# The forward takes calls of one wave or less (decode-sized) with one pack a thread (two in rows of
# 513-1024 packs) and its parameters loaded early, spread one row a CTA, and larger calls in row
# groups of more packs a thread. (N, M): each width on both sides (up to 512 rows a CTA on an SM:
# 200000 rows of 8), with 768 for rows whose last lanes hold no pack.
SPREAD_SHAPES = [(8, 1), (8, 37), (8, 200000), (768, 1), (768, 300), (768, 1500), (4096, 1), (4096, 300)]
SPREAD_SHAPES += [(8192, 1), (8192, 300)]
SPREAD_PAIRS = [(torch.bfloat16, torch.bfloat16), (torch.float32, torch.float32), (torch.bfloat16, torch.float32)]


@requires_cuda
@pytest.mark.parametrize("pair", SPREAD_PAIRS, ids=[f"{str(a)[6:]}+{str(b)[6:]}" for a, b in SPREAD_PAIRS])
@pytest.mark.parametrize("op", OPS)
def test_few_and_many_rows(op, pair):
    pack = 16 // pair[1].itemsize
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    ran = set()
    for N, M in SPREAD_SHAPES:
        names = fused_kernels_ran(lambda N=N, M=M: check_float64(op, M, N, (*pair, None), "cuda"), full_names=True)
        fwd = [n for n in names if n.startswith("add_norm_fwd_kernel")]
        assert len(fwd) == 1, (N, M, names)
        early = fwd[0].endswith("(reference_ops::AddFwdVariant)1>")  # the kernel's last argument: kFewRows
        # One pack a thread (two for rows of 513-1024 packs) on up to 512 threads, the CTAs of one
        # wave each holding a power of two of rows, up to 512 threads.
        threads = min(pow2(N // pack), 512)
        assert early == (N // pack <= 1024 and pow2(-(-M // sms)) * threads <= 512), (N, M, fwd[0])
        ran.add(early)
    assert ran == {True, False}


def pow2(n):
    return 1 << (n - 1).bit_length()


def check_float64(op, M, N, case, device, fn=ours):
    """Forward and backward of one call of `fn` (like `ours`) against float64 (h against torch's sum,
    bit for bit)."""
    x_dtype, r_dtype, out_dtype = case
    y_dtype = out_dtype or r_dtype
    params = "float32" if r_dtype in (torch.float16, torch.bfloat16) and N == 512 else "affine"
    x, r, w, b = make(op, M, N, x_dtype, r_dtype, device, params=params, seed=N)
    for t in (x, r, w, b):
        if t is not None:
            t.requires_grad_(True)
    y, h = fn(op, x, r, N, w, b, out_dtype=out_dtype)
    assert h.dtype == r_dtype and y.dtype == y_dtype
    # h is the residual stream: exactly torch's sum.
    assert torch.equal(h, x.detach() + r.detach())
    # y against float64 from that h.
    h64 = h.detach().double().requires_grad_(True)
    w64 = None if w is None else w.detach().double().requires_grad_(True)
    b64 = None if b is None else b.detach().double().requires_grad_(True)
    y64 = norm64(op, h64, N, w64, b64)
    assert_close(y, y64.detach(), y_dtype, f"{op} y")
    # Gradients arriving at both outputs (y's in y's dtype).
    g = torch.Generator().manual_seed(N + 1)
    dy = torch.randn(M, N, generator=g).to(device=device, dtype=y_dtype)
    dh = torch.randn(M, N, generator=g).to(device=device, dtype=r_dtype)
    torch.autograd.backward([y, h], [dy, dh])
    inputs64 = [t for t in (h64, w64, b64) if t is not None]
    grads64 = torch.autograd.grad([y64], inputs64, [dy.double()])
    dh64 = grads64[0] + dh.double()
    assert x.grad.dtype == x_dtype and r.grad.dtype == r_dtype
    assert_close(r.grad, dh64, r_dtype, f"{op} dresidual")
    assert_close(x.grad, dh64, x_dtype, f"{op} dx")
    if w is not None:
        assert_close(w.grad, grads64[1], r_dtype, f"{op} dweight", magnitude=M**0.5)
    if b is not None:
        assert_close(b.grad, grads64[2], r_dtype, f"{op} dbias", magnitude=M**0.5)


@requires_cuda
@pytest.mark.parametrize("pair", DTYPE_PAIRS, ids=PAIR_IDS)
@pytest.mark.parametrize("op", OPS)
def test_fused_kernels_run_where_they_should(op, pair):
    """Aligned widths in registers run the fused kernels; the others the add + norm path."""
    x_dtype, r_dtype = pair
    for N, fused in [(1024, True), (4096, True), (1001, False), (32768, False)]:
        x, r, w, b = make(op, 4, N, x_dtype, r_dtype, "cuda")
        x.requires_grad_(True)
        names = fused_kernels_ran(lambda x=x, r=r, N=N, w=w, b=b: ours(op, x, r, N, w, b)[0].sum().backward())
        ran = {"add_norm_fwd_kernel", "add_norm_bwd_kernel"} & names
        assert ran == ({"add_norm_fwd_kernel", "add_norm_bwd_kernel"} if fused else set()), (N, names)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", OPS)
def test_misaligned_non_contiguous_and_empty(op, device):
    N = 256
    base = torch.randn(5 * N + 1, device=device)
    x = base[1:].view(5, N)  # 4 bytes past a 16-byte boundary
    r = torch.randn(N, 5, device=device).t()  # transposed view
    w = torch.randn(N, device=device)
    b = torch.randn(N, device=device) if op == "layer_norm" else None
    y, h = ours(op, x, r, N, w, b)
    torch.testing.assert_close(h, x + r, rtol=0, atol=0)
    assert_close(y, norm64(op, h.double(), N, w, b), torch.float32, f"{op} y")
    y0, h0 = ours(op, x[:0], r[:0], N, w, b)
    assert y0.shape == (0, N) and h0.shape == (0, N)


# -----------------------------------------------------------------------------
# Autograd plumbing
# -----------------------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", OPS)
def test_one_output_used(op, device):
    """Only y used (dh absent), or only h used (dy absent): the gradients still agree."""
    N = 64
    x, r, w, b = make(op, 6, N, torch.float64, torch.float64, device)
    x.requires_grad_(True)
    r.requires_grad_(True)
    y, h = ours(op, x, r, N, w, b)
    (gy,) = torch.autograd.grad(y.sum(), [x], retain_graph=True)
    y_ref = norm64(op, x + r, N, w, b)
    (gy_ref,) = torch.autograd.grad(y_ref.sum(), [x])
    torch.testing.assert_close(gy, gy_ref)
    gx, gr = torch.autograd.grad((h * 3).sum(), [x, r])
    torch.testing.assert_close(gx, torch.full_like(x, 3.0))
    torch.testing.assert_close(gr, torch.full_like(r, 3.0))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", OPS)
def test_which_ops_run(op, device):
    from test_autograd import OpCalls

    N = 32
    x, r, w, b = make(op, 4, N, torch.float32, torch.float32, device)
    with OpCalls() as calls, torch.no_grad():
        ours(op, x, r, N, w, b)
    assert calls.names == [f"add_{op}"]
    x.requires_grad_(True)
    with OpCalls() as calls:
        y, h = ours(op, x, r, N, w, b)
        (y.sum() + h.sum()).backward()
    assert calls.names == [f"add_{op}_fwd", "add_norm_bwd"]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", OPS)
def test_node_frees_its_graph_and_checks_h(op, device):
    """The recorded node: named, retains or frees its graph as asked, and refuses an h (which it
    saves) modified in place before the backward."""
    N = 32
    x, r, w, b = make(op, 4, N, torch.float32, torch.float32, device)
    for t in (x, r, w, b):
        if t is not None:
            t.requires_grad_(True)
    y, h = ours(op, x, r, N, w, b)
    assert y.grad_fn is h.grad_fn
    assert y.grad_fn.name() == {"layer_norm": "AddLayerNormBackward", "rms_norm": "AddRmsNormBackward"}[op]
    loss = (y * y).sum() + h.sum()
    loss.backward(retain_graph=True)
    first = [t.grad.clone() for t in (x, r, w, b) if t is not None]
    loss.backward()
    for t, g in zip([t for t in (x, r, w, b) if t is not None], first, strict=False):
        torch.testing.assert_close(t.grad, 2 * g)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()
    y, h = ours(op, x, r, N, w, b)
    h.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("wanted", ["x", "residual", "weight", "bias"])
def test_gradients_only_where_wanted(op, wanted, device):
    if op == "rms_norm" and wanted == "bias":
        pytest.skip("rms_norm has no bias")
    N = 48
    x, r, w, b = make(op, 5, N, torch.float64, torch.float64, device)
    inputs = {"x": x, "residual": r, "weight": w, "bias": b}
    inputs[wanted].requires_grad_(True)
    y, h = ours(op, x, r, N, w, b)
    dy, dh = torch.randn_like(y), torch.randn_like(h)
    torch.autograd.backward([y, h], [dy, dh])
    refs = {k: t.detach().clone().requires_grad_(k == wanted) if t is not None else None for k, t in inputs.items()}
    h_ref = refs["x"] + refs["residual"]
    y_ref = norm64(op, h_ref, N, refs["weight"], refs["bias"])
    outs = [(o, g) for o, g in ((y_ref, dy), (h_ref, dh)) if o.requires_grad]  # h_ref: only from x, residual
    torch.autograd.backward([o for o, _ in outs], [g for _, g in outs])
    for name, t in inputs.items():
        if t is None:
            continue
        if name == wanted:
            torch.testing.assert_close(t.grad, refs[name].grad)
        else:
            assert t.grad is None, f"{name} does not require grad but received one"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("params", ["none", "weight", "all"])
def test_gradcheck(op, params, device):
    x, r, w, b = make(op, 3, 8, torch.float64, torch.float64, device, params="none" if params == "none" else "affine")
    if params == "weight":
        b = None
    args = [t.requires_grad_(True) for t in (x, r, w, b) if t is not None]

    def fn(*a):
        x, r, *p = a
        w = p[0] if p else None
        b = p[1] if len(p) > 1 else None
        y, h = ours(op, x, r, 8, w, b)
        return y, h * 0.5

    assert torch.autograd.gradcheck(fn, args)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("pair", DTYPE_PAIRS, ids=PAIR_IDS)
@pytest.mark.parametrize("op", OPS)
def test_opcheck(op, pair, device):
    x, r, w, b = make(op, 5, 24, *pair, device)
    for requires_grad in (False, True):
        for t in (x, r, w, b):
            if t is not None:
                t.requires_grad_(requires_grad)
        # y in the residual's dtype, and in x's (out_dtype) where they differ.
        for kwargs in [{}] + ([{"out_dtype": x.dtype}] if x.dtype != r.dtype else []):
            if op == "layer_norm":
                torch.library.opcheck(ops.add_layer_norm.default, (x, r, [24], w, b, 1e-5), kwargs)
                torch.library.opcheck(ops.add_layer_norm_fwd.default, (x, r, [24], w, b, 1e-5), kwargs)
            else:
                torch.library.opcheck(ops.add_rms_norm.default, (x, r, [24], w, 1e-6), kwargs)
                torch.library.opcheck(ops.add_rms_norm_fwd.default, (x, r, [24], w, 1e-6), kwargs)
    # The backward op has no derivative (a double backward raises): checked without grad.
    x, r, w, b = (None if t is None else t.detach() for t in (x, r, w, b))
    y, h, *stats = (
        ops.add_layer_norm_fwd(x, r, [24], w, b, 1e-5)
        if op == "layer_norm"
        else ops.add_rms_norm_fwd(x, r, [24], w, 1e-6)
    )
    mean, rstd = (stats[0], stats[1]) if op == "layer_norm" else (None, stats[0])
    torch.library.opcheck(
        ops.add_norm_bwd.default, (torch.randn_like(y), torch.randn_like(h), h, mean, rstd, [24], w, b, x.dtype)
    )
    if x.dtype != r.dtype:  # dy in x's dtype, as from a y of out_dtype=x.dtype
        dy = torch.randn_like(y).to(x.dtype)
        torch.library.opcheck(ops.add_norm_bwd.default, (dy, torch.randn_like(h), h, mean, rstd, [24], w, b, x.dtype))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", OPS)
def test_compile_fullgraph_matches_eager(op, device, compiled_path):
    N = 128
    mod_cls = reference_ops.AddLayerNorm if op == "layer_norm" else reference_ops.AddRMSNorm
    norm = mod_cls(N, device=device)
    with torch.no_grad():
        norm.weight.uniform_(0.5, 1.5)

    def block(x, r):
        y, h = norm(x * 2, r)
        return (y * y).sum() + h.sum()

    x, r, _, _ = make(op, 8, N, torch.float32, torch.float32, device)
    xs = [x.clone().requires_grad_(True) for _ in range(2)]
    eager = block(xs[0], r)
    eager.backward()
    compiled = torch.compile(block, fullgraph=True)(xs[1], r)
    compiled.backward()
    torch.testing.assert_close(compiled, eager)
    torch.testing.assert_close(xs[1].grad, xs[0].grad)


@requires_cuda
@pytest.mark.parametrize("op", OPS)
def test_autocast_float32_residual_stream(op):
    """LLaMA-style under autocast: a bfloat16 sublayer output added to a float32 stream; the module
    gives y in bfloat16 (the next sublayer's input dtype), h in float32."""
    N = 256
    lin = torch.nn.Linear(N, N, device="cuda")
    mod_cls = reference_ops.AddLayerNorm if op == "layer_norm" else reference_ops.AddRMSNorm
    norm = mod_cls(N, device="cuda")
    stream = torch.randn(16, N, device="cuda", requires_grad=True)
    inp = torch.randn(16, N, device="cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        x = lin(inp)
        assert x.dtype == torch.bfloat16
        y, h = norm(x, stream)
        h_ref = x.float() + stream
        y_ref = (
            F.layer_norm(h_ref, (N,), norm.weight, norm.bias)
            if op == "layer_norm"
            else F.rms_norm(h_ref, (N,), norm.weight, torch.finfo(torch.float32).eps)
        )
    assert h.dtype == torch.float32 and y.dtype == torch.bfloat16
    torch.testing.assert_close(h, h_ref, rtol=0, atol=0)
    y_ref = y_ref.to(torch.bfloat16)
    torch.testing.assert_close(y, y_ref)
    (g,) = torch.autograd.grad((y.float() ** 2).sum() + h.sum(), [stream])
    (g_ref,) = torch.autograd.grad((y_ref.float() ** 2).sum() + h_ref.sum(), [stream])
    torch.testing.assert_close(g, g_ref, rtol=2e-2, atol=2e-2)
    # Outside autocast the module keeps y in the stream's dtype.
    y32, _ = norm(x, stream)
    assert y32.dtype == torch.float32


# -----------------------------------------------------------------------------
# Modules and errors
# -----------------------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
def test_modules_keep_the_norms_parameters(device):
    N = 48
    for fused_cls, plain_cls in [
        (reference_ops.AddLayerNorm, torch.nn.LayerNorm),
        (reference_ops.AddRMSNorm, torch.nn.RMSNorm),
    ]:
        plain = plain_cls(N, device=device)
        fused = fused_cls(N, device=device)
        with torch.no_grad():
            plain.weight.uniform_(0.5, 1.5)
        fused.load_state_dict(plain.state_dict())
        x, r = torch.randn(2, 3, N, device=device), torch.randn(2, 3, N, device=device)
        y, h = fused(x, r)
        torch.testing.assert_close(h, x + r, rtol=0, atol=0)
        torch.testing.assert_close(y, plain(x + r))


@pytest.mark.parametrize("device", DEVICES)
def test_clear_errors(device):
    x = torch.randn(4, 16, device=device)
    w = torch.ones(16, device=device)
    with pytest.raises(RuntimeError, match="residual must have x's shape"):
        reference_ops.add_rms_norm(x, torch.randn(4, 8, device=device), (16,), w)
    with pytest.raises(RuntimeError, match="or float32 when x is float16/bfloat16"):
        reference_ops.add_rms_norm(x, x.bfloat16(), (16,), w)
    with pytest.raises(RuntimeError, match="weight has dtype"):
        reference_ops.add_layer_norm(x.bfloat16(), x, (16,), w.bfloat16())
    with pytest.raises(RuntimeError, match="normalized_shape"):
        reference_ops.add_layer_norm(x, x, (8,), None)
    with pytest.raises(RuntimeError, match="out_dtype .* is neither the residual's dtype"):
        reference_ops.add_rms_norm(x.bfloat16(), x, (16,), w, out_dtype=torch.float16)
    if device == "cuda":
        with pytest.raises(RuntimeError, match="residual is on cpu but x is on cuda"):
            reference_ops.add_rms_norm(x, x.cpu(), (16,), w)
