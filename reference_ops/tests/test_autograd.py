"""The public ops reference_ops::layer_norm / rms_norm and their autograd kernels in C++.

The autograd kernel decides per call: grad mode on and an input that requires grad -> the *_fwd op,
whose statistics are saved for the *_bwd op; otherwise -> the *_inference op. Checked here on real
tensors: which ops run below autograd (a TorchDispatchMode sees every op call that passes the
autograd kernels), what is saved (saved-tensor hooks), gradients against torch.nn.functional,
opcheck, gradcheck, torch.compile(fullgraph=True) forward and backward, and the error of a double
backward. Every test runs on the CPU; the same tests run on CUDA where a GPU is present.
"""

import pytest
import torch
import torch.nn.functional as F
from graph_recorder import GraphRecorder
from torch.utils._python_dispatch import TorchDispatchMode

import reference_ops

HAS_CUDA = torch.cuda.is_available()
requires_cuda = pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
DEVICES = ["cpu", pytest.param("cuda", marks=requires_cuda)]
OPS = ["layer_norm", "rms_norm"]
ops = torch.ops.reference_ops


class OpCalls(TorchDispatchMode):
    """Records the reference_ops ops that run below autograd (their names, e.g. "layer_norm_fwd")."""

    def __init__(self):
        super().__init__()
        self.names = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.namespace == "reference_ops":
            self.names.append(func._opname)
        return func(*args, **(kwargs or {}))


def make(op, device, dtype=torch.float32, M=6, N=40, params=True, requires_grad=False, gen_seed=0):
    g = torch.Generator(device="cpu").manual_seed(gen_seed)
    x = torch.randn(M, N, generator=g).to(device=device, dtype=dtype)
    w = (torch.randn(N, generator=g) * 0.5 + 1.0).to(device=device, dtype=dtype) if params else None
    b = torch.randn(N, generator=g).to(device=device, dtype=dtype) if params and op == "layer_norm" else None
    for t in (x, w, b):
        if t is not None:
            t.requires_grad_(requires_grad)
    return x, w, b


def call(op, x, N, w, b, eps=1e-5, impl="ours"):
    if op == "layer_norm":
        fn = reference_ops.layer_norm if impl == "ours" else F.layer_norm
        return fn(x, (N,), w, b, eps)
    fn = reference_ops.rms_norm if impl == "ours" else F.rms_norm
    return fn(x, (N,), w, eps)


def call_op(op, x, N, w, b, eps=1e-5):
    if op == "layer_norm":
        return ops.layer_norm(x, [N], w, b, eps)
    return ops.rms_norm(x, [N], w, eps)


# -----------------------------------------------------------------------------
# Which op runs
# -----------------------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("case", ["no_grad", "nothing_requires_grad", "inference_mode"])
def test_calls_without_a_gradient_run_the_inference_op(op, case, device):
    x, w, b = make(op, device, requires_grad=case == "no_grad")
    saved = []
    with OpCalls() as calls, torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        if case == "no_grad":
            with torch.no_grad():
                y = call(op, x, 40, w, b)
        elif case == "inference_mode":
            with torch.inference_mode():
                y = call(op, x, 40, w, b)
        else:
            y = call(op, x, 40, w, b)
    # In inference mode autograd is skipped: the public op's own (CPU / CUDA) kernel is the
    # inference path. Otherwise its autograd kernel calls the inference op.
    expected = [op] if case == "inference_mode" else [f"{op}_inference"]
    assert calls.names == expected
    assert saved == [], "nothing may be saved for a backward that cannot happen"
    assert y.grad_fn is None and not y.requires_grad
    with torch.no_grad():
        torch.testing.assert_close(y, call(op, x, 40, w, b, impl="torch"), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("wanted", ["x", "weight", "all"])
def test_calls_with_a_gradient_save_the_statistics(op, wanted, device):
    M, N = 6, 40
    x, w, b = make(op, device, dtype=torch.float64)
    leaves = {"x": [x], "weight": [w], "all": [t for t in (x, w, b) if t is not None]}[wanted]
    for t in leaves:
        t.requires_grad_()
    saved = []
    with OpCalls() as calls, torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        y = call(op, x, N, w, b)
    assert calls.names == [f"{op}_fwd"]
    assert y.requires_grad and y.grad_fn is not None
    # x, the statistics (one float64 value a row: float64 x) and the parameters.
    stats = [t for t in saved if t.shape == (M,)]
    assert len(stats) == (2 if op == "layer_norm" else 1), [tuple(t.shape) for t in saved]
    assert all(t.dtype == torch.float64 for t in stats)
    assert any(t is x for t in saved)
    dy = torch.randn_like(y)
    with OpCalls() as calls:
        grads = torch.autograd.grad(y, leaves, dy)
    assert calls.names == [f"{op}_bwd"]
    ref_leaves = [t.detach().requires_grad_() for t in leaves]
    ref_args = {id(t): r for t, r in zip(leaves, ref_leaves, strict=True)}
    xr, wr, br = (None if t is None else ref_args.get(id(t), t.detach()) for t in (x, w, b))
    y_ref = call(op, xr, N, wr, br, impl="torch")
    grads_ref = torch.autograd.grad(y_ref, ref_leaves, dy)
    torch.testing.assert_close(y, y_ref, rtol=1e-12, atol=1e-12)
    for g, g_ref in zip(grads, grads_ref, strict=True):
        torch.testing.assert_close(g, g_ref, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", OPS)
def test_only_the_statistics_used_gives_no_gradient(op, device):
    """The *_fwd ops' mean / rstd are outputs without a gradient."""
    x, w, b = make(op, device, requires_grad=True)
    out = ops.layer_norm_fwd(x, [40], w, b, 1e-5) if op == "layer_norm" else ops.rms_norm_fwd(x, [40], w, 1e-5)
    assert out[0].requires_grad and not any(t.requires_grad for t in out[1:])
    loss = out[0].sum() * 0 + x.sum()  # x's gradient from the second term only
    grads = torch.autograd.grad(loss, [x])
    torch.testing.assert_close(grads[0], torch.ones_like(x))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", OPS)
def test_normalized_shape_and_eps_forms(op, device):
    """normalized_shape as an int, a list, a tuple or a torch.Size; eps as an int; rms_norm's
    eps=None is torch.finfo(x.dtype).eps."""
    x = torch.randn(3, 4, 8, device=device, dtype=torch.float64)
    w = torch.randn(8, device=device, dtype=torch.float64)
    for shape in (8, [8], (8,), torch.Size([8]), x.shape[-1:]):
        if op == "layer_norm":
            torch.testing.assert_close(
                reference_ops.layer_norm(x, shape, w, None, 1), F.layer_norm(x, (8,), w, None, 1)
            )
        else:
            torch.testing.assert_close(reference_ops.rms_norm(x, shape, w), F.rms_norm(x, (8,), w))
    if op == "rms_norm":
        for dtype in (torch.float32, torch.bfloat16, torch.float16):
            xd, wd = x.to(dtype), w.to(dtype)
            explicit = reference_ops.rms_norm(xd, 8, wd, torch.finfo(dtype).eps)
            assert torch.equal(reference_ops.rms_norm(xd, 8, wd), explicit)
            m = reference_ops.RMSNorm(8, device=device, dtype=dtype)
            assert torch.equal(m(xd), reference_ops.rms_norm(xd, 8, m.weight, torch.finfo(dtype).eps))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", OPS)
def test_wrong_dtype_is_the_ops_error(op, device):
    x = torch.ones(4, 8, dtype=torch.int32, device=device)
    with pytest.raises(RuntimeError, match="must be float32, float16, bfloat16 or float64"):
        call(op, x, 8, None, None, eps=None if op == "rms_norm" else 1e-5)


# -----------------------------------------------------------------------------
# opcheck and gradcheck of the public ops
# -----------------------------------------------------------------------------

OPCHECK_DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", OPCHECK_DTYPES, ids=str)
@pytest.mark.parametrize("op", OPS)
def test_opcheck_public_ops(op, dtype, device):
    for requires_grad in (False, True):
        for params in ("none", "weight", "all", "float32"):
            if params == "float32" and dtype not in (torch.float16, torch.bfloat16):
                continue
            x, w, b = make(op, device, dtype=dtype, M=5, N=24, params=params != "none")
            if params == "weight":
                b = None
            if params == "float32":  # mixed precision: float32 parameters with 16-bit x
                w, b = w.float(), None if b is None else b.float()
            for t in (x, w, b):
                if t is not None:
                    t.requires_grad_(requires_grad)
            if op == "layer_norm":
                torch.library.opcheck(ops.layer_norm.default, (x, [24], w, b, 1e-5))
            else:
                torch.library.opcheck(ops.rms_norm.default, (x, [24], w, 1e-6))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("params", ["none", "weight", "all"])
def test_gradcheck_public_ops(op, params, device):
    x, w, b = make(op, device, dtype=torch.float64, M=3, N=9, params=params != "none", requires_grad=True)
    if params == "weight":
        b = None
    if op == "layer_norm":
        assert torch.autograd.gradcheck(lambda x, w, b: ops.layer_norm(x, [9], w, b, 1e-5), (x, w, b))
    else:
        assert torch.autograd.gradcheck(lambda x, w: ops.rms_norm(x, [9], w, 1e-5), (x, w))


# -----------------------------------------------------------------------------
# Double backward
# -----------------------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", OPS)
def test_double_backward_raises_a_clear_error(op, device):
    x, w, b = make(op, device, dtype=torch.float64, requires_grad=True)
    y = call(op, x, 40, w, b)
    # A first derivative with create_graph=True is still right...
    (dx,) = torch.autograd.grad((y * y).sum(), [x], create_graph=True)
    y_ref = call(op, x, 40, w, b, impl="torch")
    (dx_ref,) = torch.autograd.grad((y_ref * y_ref).sum(), [x])
    torch.testing.assert_close(dx.detach(), dx_ref)
    # ...and differentiating it says what to do instead.
    with pytest.raises(RuntimeError, match="double backward .* is not supported.*torch.nn.functional"):
        dx.sum().backward()


# -----------------------------------------------------------------------------
# The recorded node behaves as a native op's: graph freeing, in-place checks, partial gradients
# -----------------------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", OPS)
def test_node_is_named_and_frees_its_graph(op, device):
    x, w, b = make(op, device, requires_grad=True)
    y = call(op, x, 40, w, b)
    assert y.grad_fn.name() == {"layer_norm": "LayerNormBackward", "rms_norm": "RmsNormBackward"}[op]
    dy = torch.randn_like(y)
    y.backward(dy, retain_graph=True)
    first = [t.grad.clone() for t in (x, w, b) if t is not None]
    y.backward(dy)  # retained: the same gradients again, accumulated
    for t, g in zip([t for t in (x, w, b) if t is not None], first, strict=False):
        torch.testing.assert_close(t.grad, 2 * g)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward(dy)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", OPS)
def test_node_refuses_inputs_modified_in_place(op, device):
    x, w, b = make(op, device, requires_grad=True)
    h = x * 1.0  # a non-leaf input that can be modified in place
    y = call(op, h, 40, w, b)
    h.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("wanted", ["x", "weight", "bias"])
def test_node_sends_gradients_only_where_wanted(op, wanted, device):
    if op == "rms_norm" and wanted == "bias":
        pytest.skip("rms_norm has no bias")
    x, w, b = make(op, device)
    inputs = {"x": x, "weight": w, "bias": b}
    inputs[wanted].requires_grad_(True)
    dy = torch.randn(6, 40, device=device)
    call(op, x, 40, w, b).backward(dy)
    x_ref, w_ref, b_ref = (t.detach().clone().requires_grad_(True) if t is not None else None for t in (x, w, b))
    call(op, x_ref, 40, w_ref, b_ref, impl="torch").backward(dy)
    refs = {"x": x_ref, "weight": w_ref, "bias": b_ref}
    for name, t in inputs.items():
        if t is None:
            continue
        if name == wanted:
            torch.testing.assert_close(t.grad, refs[name].grad, rtol=1e-5, atol=1e-5)
        else:
            assert t.grad is None, f"{name} does not require grad but received one"


# -----------------------------------------------------------------------------
# torch.compile: AOTAutograd traces through the C++ autograd kernels (keep_kernels_when_compiled),
# or the ops' math (the default)
# -----------------------------------------------------------------------------


def _module(op, N, device):
    cls = reference_ops.LayerNorm if op == "layer_norm" else reference_ops.RMSNorm
    m = cls(N, device=device)
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.randn_like(p))
    return m


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("api", ["function", "module"])
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_compile_fullgraph_forward_backward_matches_eager(op, api, dynamic, device, compiled_path):
    """Compiled forward and backward match eager; the graphs hold the kernels' ops (the training ops
    with a gradient, the inference op without) or, by default, none of them (the ops' math)."""
    N = 64
    graphs = GraphRecorder()
    backend = graphs.backend
    if api == "module":
        norm = _module(op, N, device)
        params = list(norm.parameters())
    else:
        _, w, b = make(op, device, N=N, requires_grad=True)
        params = [t for t in (w, b) if t is not None]

        def norm(t):
            return call(op, t, N, w, b)

    def f(t):
        y = norm(t.sin())
        return (y * y).sum()

    compiled = torch.compile(f, backend=backend, fullgraph=True, dynamic=dynamic)
    for M in (8, 5):  # a second shape: a recompile, or the dynamic graph reused
        x = torch.randn(M, N, device=device, requires_grad=True)
        loss_c = compiled(x)
        grads_c = torch.autograd.grad(loss_c, [x] + params)
        loss_e = f(x)
        grads_e = torch.autograd.grad(loss_e, [x] + params)
        torch.testing.assert_close(loss_c, loss_e, rtol=1e-5, atol=1e-5)
        for gc, ge in zip(grads_c, grads_e, strict=True):
            torch.testing.assert_close(gc, ge, rtol=1e-4, atol=1e-4)
    kernels = compiled_path == "kernels"
    ours = graphs.ours()
    if not kernels:
        assert not ours, ours
    else:
        assert f"reference_ops.{op}_fwd.default" in graphs.forward, graphs
        assert f"reference_ops.{op}_bwd.default" in graphs.backward, graphs
    # No-grad: the inference op, and no statistics.
    graphs.forward.clear()
    torch._dynamo.reset()
    with torch.no_grad():
        x = torch.randn(8, N, device=device)
        torch.testing.assert_close(compiled(x), f(x), rtol=1e-5, atol=1e-5)
    if kernels:
        assert f"reference_ops.{op}_inference.default" in graphs.forward, graphs
    assert f"reference_ops.{op}_fwd.default" not in graphs.forward, graphs


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", OPS)
def test_compile_default_backend_matches_eager(op, device, compiled_path):
    """The default inductor backend, fullgraph, forward and backward of the module."""
    norm = _module(op, 32, device)
    compiled = torch.compile(norm, fullgraph=True)
    x = torch.randn(4, 7, 32, device=device, requires_grad=True)
    dy = torch.randn(4, 7, 32, device=device)
    y_c = compiled(x)
    grads_c = torch.autograd.grad(y_c, [x, *norm.parameters()], dy)
    y_e = norm(x)
    grads_e = torch.autograd.grad(y_e, [x, *norm.parameters()], dy)
    torch.testing.assert_close(y_c, y_e)
    for gc, ge in zip(grads_c, grads_e, strict=True):
        torch.testing.assert_close(gc, ge, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    ("op", "fused"), [("layer_norm", False), ("rms_norm", True)], ids=["layer_norm", "add_rms_norm"]
)
def test_compiled_autograd_of_a_compiled_forward(op, fused, device, compiled_path):
    """Compiled autograd over a torch.compile'd forward (AOTAutograd traced the ops, or their math:
    the backward is in the compiled graph) gives the eager gradients. An eagerly recorded node has
    no compiled-autograd support (README: Autograd)."""
    import torch._dynamo.compiled_autograd as compiled_autograd

    x, w, b = make(op, device, requires_grad=True)
    r = torch.randn_like(x)

    def fn(x):
        if not fused:
            return call(op, x, 40, w, b)
        y, h = (
            reference_ops.add_layer_norm(x, r, (40,), w, b)
            if op == "layer_norm"
            else reference_ops.add_rms_norm(x, r, (40,), w)
        )
        return y * h

    leaves = [t for t in (x, w, b) if t is not None]
    dy = torch.randn(6, 40, device=device)
    y = torch.compile(fn, backend="aot_eager", fullgraph=True)(x)
    with compiled_autograd._enable(torch.compile(backend="aot_eager")):
        grads = torch.autograd.grad(y, leaves, dy)
    expected = torch.autograd.grad(fn(x), leaves, dy)
    for g, e in zip(grads, expected, strict=True):
        torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-5)


# -----------------------------------------------------------------------------
# CUDA graphs
# -----------------------------------------------------------------------------


@requires_cuda
@pytest.mark.parametrize("op", OPS)
def test_cuda_graph_of_the_inference_path(op):
    """A no-grad call captured in a CUDA graph runs the inference op (no statistics) on replay."""
    N = 1024
    x, w, b = make(op, "cuda", dtype=torch.bfloat16, M=64, N=N)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.no_grad():
        for _ in range(2):
            call(op, x, N, w, b)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with OpCalls() as calls, torch.no_grad(), torch.cuda.graph(graph):
        y_static = call(op, x, N, w, b)
    assert calls.names == [f"{op}_inference"]
    for seed in (1, 2):
        x.copy_(make(op, "cuda", dtype=torch.bfloat16, M=64, N=N, gen_seed=seed)[0])
        graph.replay()
        with torch.no_grad():
            assert torch.equal(y_static, call(op, x, N, w, b))


# -----------------------------------------------------------------------------
# One mechanism: every op records a node; forward-mode AD is refused
# -----------------------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", OPS)
def test_fwd_op_records_the_public_ops_node(op, device):
    """The *_fwd ops record the public op's node: same gradients, statistics without one."""
    x, w, b = make(op, device, dtype=torch.float64, requires_grad=True)
    out = ops.layer_norm_fwd(x, [40], w, b, 1e-5) if op == "layer_norm" else ops.rms_norm_fwd(x, [40], w, 1e-5)
    assert out[0].grad_fn.name() == {"layer_norm": "LayerNormBackward", "rms_norm": "RmsNormBackward"}[op]
    leaves = [t for t in (x, w, b) if t is not None]
    dy = torch.randn_like(out[0])
    grads = torch.autograd.grad(out[0], leaves, dy)
    grads_ref = torch.autograd.grad(call(op, x, 40, w, b, impl="torch"), leaves, dy)
    for g, g_ref in zip(grads, grads_ref, strict=True):
        torch.testing.assert_close(g, g_ref, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("requires_grad", [False, True])
def test_forward_mode_ad_raises_a_clear_error(op, requires_grad, device):
    """A dual tensor's tangent would be dropped: every op refuses it, with or without grad."""
    import torch.autograd.forward_ad as fwAD

    x, w, b = make(op, device, dtype=torch.float64, requires_grad=requires_grad)
    match = "forward-mode AD .* is not supported"
    with fwAD.dual_level():
        xd = fwAD.make_dual(x, torch.randn_like(x))
        with pytest.raises(RuntimeError, match=match):
            call(op, xd, 40, w, b)
        with pytest.raises(RuntimeError, match=match):
            call_op(op, xd, 40, w, b)
        with pytest.raises(RuntimeError, match=match):
            ops.layer_norm_fwd(xd, [40], w, b, 1e-5)
        with pytest.raises(RuntimeError, match=match):
            ops.rms_norm_inference(xd, [40], w, 1e-5)
