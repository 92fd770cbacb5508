"""What torch.compile and torch.export trace from reference_ops' functions and modules: the ops'
math (reference_ops/_decomposed.py), which inductor fuses with the operations around it, unless
reference_ops.keep_kernels_when_compiled(True).

The traced math is held to the kernels' bar: forward and backward against float64 for every dtype
and parameter mode (inductor on CUDA; aot_eager, which runs the traced graph op by op, on the CPU);
its graphs hold no reference_ops op; bad arguments get the kernels' errors; the switch recompiles.
"""

import pytest
import test_add_norm
import test_norm
import torch
from graph_recorder import GraphRecorder

import reference_ops

HAS_CUDA = torch.cuda.is_available()
requires_cuda = pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
DEVICES = ["cpu", pytest.param("cuda", marks=requires_cuda)]


@pytest.fixture(autouse=True)
def fresh_dynamo():
    # Each test compiles its own functions: start below dynamo's recompile limit.
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def compile_for(fn, device):
    backend = "inductor" if device == "cuda" else "aot_eager"
    return torch.compile(fn, backend=backend, fullgraph=True, dynamic=False)


# -----------------------------------------------------------------------------
# The traced math against float64
# -----------------------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("M", "N"), [(1, 7), (37, 1023), (5, 4104)], ids=lambda v: str(v))
@pytest.mark.parametrize(("mode", "dtype"), test_norm.mode_dtype_pairs(test_norm.LAYER_MODES))
def test_layer_norm_math_matches_float64(mode, dtype, M, N, device):
    test_norm.check_against_reference("layer_norm", mode, M, N, dtype, device, fn=compile_for(test_norm.ours, device))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("M", "N"), [(1, 7), (37, 1023), (5, 4104)], ids=lambda v: str(v))
@pytest.mark.parametrize(("mode", "dtype"), test_norm.mode_dtype_pairs(test_norm.RMS_MODES))
def test_rms_norm_math_matches_float64(mode, dtype, M, N, device):
    traced = compile_for(test_norm.ours, device)
    test_norm.check_against_reference("rms_norm", mode, M, N, dtype, device, fn=traced)
    test_norm.check_against_reference("rms_norm", mode, M, N, dtype, device, eps=1e-3, fn=traced)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", test_add_norm.OUT_CASES, ids=test_add_norm.OUT_IDS)
@pytest.mark.parametrize("N", [8, 1001])
@pytest.mark.parametrize("op", ["layer_norm", "rms_norm"])
def test_add_norm_math_matches_float64(op, N, case, device):
    traced = compile_for(test_add_norm.ours, device)

    def fn(op, x, r, N, w, b, eps=1e-5, out_dtype=None):
        return traced(op, x, r, N, w, b, eps, out_dtype)

    test_add_norm.check_float64(op, 37, N, case, device, fn=fn)


# -----------------------------------------------------------------------------
# What the graphs hold
# -----------------------------------------------------------------------------


def _block(kind, norm):
    """A pre-norm step around `norm`: the math traced (or the op kept) with its neighbours."""
    if kind == "fused":
        return lambda x, r: sum(t.float().sum() for t in norm(x.sin(), r))
    return lambda x, r: norm(x.sin() + r).float().square().sum()


MODULES = [
    ("plain", reference_ops.LayerNorm),
    ("plain", reference_ops.RMSNorm),
    ("fused", reference_ops.AddLayerNorm),
    ("fused", reference_ops.AddRMSNorm),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("kind", "cls"), MODULES, ids=[c.__name__ for _, c in MODULES])
def test_graphs_hold_the_math_or_the_kernels(kind, cls, device):
    norm = cls(64, device=device)
    x = torch.randn(8, 64, device=device, requires_grad=True)
    r = torch.randn(8, 64, device=device)
    expected = _block(kind, norm)(x, r)
    for keep in (False, True, False):  # the switch is read while tracing: each change recompiles
        reference_ops.keep_kernels_when_compiled(keep)
        rec = GraphRecorder()
        step = torch.compile(_block(kind, norm), backend=rec.backend, fullgraph=True)
        loss = step(x, r)
        loss.backward()
        with torch.no_grad():
            step(x, r)
        torch.testing.assert_close(loss, expected, rtol=1e-5, atol=1e-5)
        assert bool(rec.ours()) == keep, rec.targets
    reference_ops.keep_kernels_when_compiled(False)


def test_export_holds_the_math():
    """torch.export gives a program of torch operations only: it runs where reference_ops is not
    installed."""
    model = torch.nn.Sequential(torch.nn.Linear(32, 32), reference_ops.RMSNorm(32), reference_ops.LayerNorm(32))
    x = torch.randn(4, 32)
    program = torch.export.export(model, (x,))
    targets = [str(n.target) for n in program.graph.nodes if n.op == "call_function"]
    assert not [t for t in targets if "reference_ops" in t], targets
    torch.testing.assert_close(program.module()(x), model(x), rtol=1e-5, atol=1e-5)


@requires_cuda
@pytest.mark.parametrize("cls", [reference_ops.AddLayerNorm, reference_ops.AddRMSNorm], ids=lambda c: c.__name__)
def test_autocast_float32_stream_compiled(cls):
    """Under autocast beside a float32 residual stream the compiled modules give what the eager ones
    do: y in bfloat16 (the next matmul's dtype), h in float32."""
    N = 256
    lin = torch.nn.Linear(N, N, device="cuda")
    norm = cls(N, device="cuda")
    inp = torch.randn(16, N, device="cuda")
    stream = torch.randn(16, N, device="cuda", requires_grad=True)

    def step(inp, stream):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            y, h = norm(lin(inp), stream)
            return y, h, lin(y).float().sum() + h.sum()

    y_c, h_c, loss_c = torch.compile(step, fullgraph=True)(inp, stream)
    (grad_c,) = torch.autograd.grad(loss_c, [stream])
    y_e, h_e, loss_e = step(inp, stream)
    (grad_e,) = torch.autograd.grad(loss_e, [stream])
    assert (y_c.dtype, h_c.dtype) == (y_e.dtype, h_e.dtype) == (torch.bfloat16, torch.float32)
    torch.testing.assert_close(h_c, h_e)
    torch.testing.assert_close(y_c, y_e, rtol=1.6e-2, atol=1e-2)
    torch.testing.assert_close(grad_c, grad_e, rtol=1e-2, atol=1e-2)


# -----------------------------------------------------------------------------
# Errors: the kernels' messages, while tracing (dtypes named as torch prints them: torch.float64
# where the kernels say Double)
# -----------------------------------------------------------------------------

BAD_CALLS = {
    "shape": (
        lambda x: reference_ops.layer_norm(x, (32,)),
        "normalized_shape \\[32\\] must equal the trailing dimensions of x",
    ),
    "dtype": (
        lambda x: reference_ops.rms_norm(x.int(), (64,)),
        "x must be float32, float16, bfloat16 or float64",
    ),
    "weight dtype": (
        lambda x: reference_ops.rms_norm(x, (64,), torch.ones(64, dtype=torch.float64)),
        "weight has dtype .* but x has dtype",
    ),
    "weight shape": (
        lambda x: reference_ops.layer_norm(x, (64,), torch.ones(63)),
        "weight must have shape normalized_shape",
    ),
    "bias dtype": (
        lambda x: reference_ops.layer_norm(x.half(), (64,), torch.ones(64), torch.ones(64, dtype=torch.half)),
        "must have the same dtype",
    ),
    "residual dtype": (
        lambda x: reference_ops.add_rms_norm(x, x.half(), (64,)),
        "residual has dtype .* but x has dtype",
    ),
    "residual shape": (
        lambda x: reference_ops.add_layer_norm(x, x[:2], (64,)),
        "residual must have x's shape",
    ),
    "out_dtype": (
        lambda x: reference_ops.add_layer_norm(x, x, (64,), out_dtype=torch.float16),
        "out_dtype .* is neither the residual's dtype",
    ),
}


@pytest.mark.parametrize("case", list(BAD_CALLS))
def test_bad_arguments_get_the_kernels_errors_when_compiled(case):
    fn, message = BAD_CALLS[case]
    x = torch.randn(4, 64)
    with pytest.raises(RuntimeError, match=message):
        fn(x)
    with pytest.raises(RuntimeError, match=message):
        torch.compile(fn, backend="aot_eager")(x)
    # fullgraph: dynamo's error, which quotes the message
    with pytest.raises(RuntimeError, match=message):
        torch.compile(fn, backend="aot_eager", fullgraph=True)(x)
