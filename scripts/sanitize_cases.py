"""The calls that scripts/sanitize.py runs under compute-sanitizer: every kernel family of
reference_ops, or the kernels of a generated project, forward and backward, on a GPU.

Every tensor the kernels read (x, weight, bias, dy) is a view that ends at the last byte of its
own buffer, most of them starting at an offset into it; with PYTORCH_NO_CUDA_MEMORY_CACHING=1 each
buffer is its own exact-size cudaMalloc, so a read past a tensor's end is a read past its
allocation. Each result is checked against float64 on the CPU (no torch kernel runs on the GPU
besides copies, so the sanitizer reports concern the extension alone).

    python scripts/sanitize_cases.py reference_ops [--coverage]
    python scripts/sanitize_cases.py project --package my_cuda_op --op scaled_gelu [--coverage]

--coverage runs the same calls under torch.profiler and prints the CUDA kernels each family
launched (one line `KERNEL <name>` each), which sanitize.py uses to show that every family ran.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
import torch.nn.functional as F

TOLERANCES = {
    torch.float64: dict(rtol=1e-9, atol=1e-9),
    torch.float32: dict(rtol=1e-4, atol=1e-4),
    torch.float16: dict(rtol=1e-2, atol=1e-2),
    torch.bfloat16: dict(rtol=5e-2, atol=5e-2),
}
# Where the cases' tensors live: the CPU kernels run them too (reference_ops/tests/test_sweep_cases.py,
# which keeps this file's cases and references true on a machine without a GPU).
DEVICE = "cuda"
# 16 bytes: views at this offset keep the kernels' vector paths; one element off takes the others.
ALIGNED_OFFSET_BYTES = 16


def tail_view(values: torch.Tensor, offset_elems: int) -> torch.Tensor:
    """``values`` copied to the GPU as a view starting ``offset_elems`` elements into a buffer
    that ends exactly where the view ends."""
    buffer = torch.empty(
        offset_elems + values.numel(), dtype=values.dtype, device=DEVICE
    )
    view = buffer[offset_elems:].view(values.shape)
    view.copy_(values)
    return view


def random(shape, dtype, *, mean=0.0, std=1.0, generator=None) -> torch.Tensor:
    return (torch.randn(shape, generator=generator) * std + mean).to(dtype)


def check(name: str, got: torch.Tensor, want: torch.Tensor, dtype: torch.dtype) -> None:
    tol = TOLERANCES[dtype]
    scale = max(1.0, want.abs().max().item()) if want.numel() else 1.0
    torch.testing.assert_close(
        got.cpu().double(), want, rtol=tol["rtol"], atol=tol["atol"] * scale, msg=name
    )


@dataclass
class Case:
    family: str
    run: Callable[[], None]


# -----------------------------------------------------------------------------
# reference_ops
# -----------------------------------------------------------------------------

DTYPES = {
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
    "float32": torch.float32,
    "float64": torch.float64,
}
# The small shapes every group runs whole: each row count up to 8 and each width up to 64.
SMALL_ROWS, SMALL_COLS = 8, 64


@dataclass(frozen=True)
class NormCall:
    """One call of a reference_ops op, forward and backward, on an M x N input.

    ``params``: the dtype of weight and bias (norm ops) or of the residual stream (fused ops);
    ``y_in_x``: the fused ops' out_dtype=x.dtype beside a float32 stream; ``offset``: elements
    between the start of each tensor's own buffer and the tensor (every buffer ends where its
    tensor ends)."""

    op: str
    M: int
    N: int
    dtype: str
    params: str
    weight: bool
    bias: bool
    offset: int = 0
    y_in_x: bool = False

    @property
    def fused(self) -> bool:
        return self.op.startswith("add_")

    @property
    def norm(self) -> str:
        return self.op.removeprefix("add_")

    def __str__(self) -> str:
        parts = [self.op, f"{self.M}x{self.N}", self.dtype]
        if self.params != self.dtype:
            parts.append(f"{'stream' if self.fused else 'params'} {self.params}")
        if self.y_in_x:
            parts.append(f"y {self.dtype}")
        parts.append({(True, True): "weight+bias", (True, False): "weight", (False, True): "bias"}.get(
            (self.weight, self.bias), "no parameters"))
        if self.offset:
            parts.append(f"offset {self.offset}")
        return " ".join(parts)


def run_norm_call(c: NormCall, check_values: bool) -> None:
    """The forward with its statistics, the backward (gradients at y, and at h for the fused
    ops) and the inference forward; with ``check_values`` each result against float64 on the CPU."""
    import reference_ops

    dtype, pdtype = DTYPES[c.dtype], DTYPES[c.params]
    y_dtype = pdtype if c.fused and not c.y_in_x else dtype
    gen = torch.Generator().manual_seed(c.M * 7919 + c.N)
    x_cpu = random((c.M, c.N), dtype, mean=1.0, std=1.5, generator=gen)
    r_cpu = random((c.M, c.N), pdtype, mean=0.5, std=2.0, generator=gen) if c.fused else None
    if c.norm == "layer_norm" and c.N > 1 and c.M > 0:
        # A row of nearly equal values (variance near eps) makes LayerNorm's gradient so
        # ill-conditioned that no kernel in x's dtype matches float64: such rows get a ramp.
        h = x_cpu.double() + (r_cpu.double() if c.fused else 0.0)
        flat = h.std(dim=1) < 0.25
        x_cpu[flat] += torch.linspace(-1.0, 1.0, c.N, dtype=torch.float64).to(dtype)
    stream = pdtype if c.fused else dtype
    w_cpu = random((c.N,), pdtype, mean=1.0, std=0.5, generator=gen) if c.weight else None
    b_cpu = random((c.N,), pdtype, generator=gen) if c.bias else None
    dy_cpu = random((c.M, c.N), y_dtype, generator=gen)
    dh_cpu = random((c.M, c.N), stream, generator=gen) if c.fused else None
    leaves = [tail_view(t, c.offset) if t is not None else None for t in (x_cpu, r_cpu, w_cpu, b_cpu)]
    for t in leaves:
        if t is not None:
            t.requires_grad_()
    x, r, w, b = leaves
    shape = (c.N,)
    out_dtype = dtype if c.y_in_x else None

    def call():
        if c.op == "layer_norm":
            return reference_ops.layer_norm(x, shape, w, b, 1e-5), None
        if c.op == "rms_norm":
            return reference_ops.rms_norm(x, shape, w, 1e-6), None
        if c.op == "add_layer_norm":
            return reference_ops.add_layer_norm(x, r, shape, w, b, 1e-5, out_dtype=out_dtype)
        return reference_ops.add_rms_norm(x, r, shape, w, 1e-6, out_dtype=out_dtype)

    y, h = call()
    inputs = [t for t in leaves if t is not None]
    outputs, grads_out = ([y, h], [tail_view(dy_cpu, c.offset), tail_view(dh_cpu, c.offset)]) if c.fused else (
        [y], [tail_view(dy_cpu, c.offset)])
    grads = torch.autograd.grad(outputs, inputs, grads_out)
    with torch.no_grad():
        y_inference, _ = call()
    if DEVICE == "cuda":
        torch.cuda.synchronize()
    if not check_values:
        return

    # float64 reference: h rounded to the stream's dtype, as the op stores and normalises it.
    x64 = x_cpu.double().requires_grad_()
    r64 = r_cpu.double().requires_grad_() if c.fused else None
    w64 = w_cpu.double().requires_grad_() if c.weight else None
    b64 = b_cpu.double().requires_grad_() if c.bias else None
    h64 = (x64 + r64).to(stream).double() if c.fused else x64
    if c.fused:
        h64 = h64.detach().requires_grad_()
    y64 = (F.layer_norm(h64, shape, w64, b64, 1e-5) if c.norm == "layer_norm"
           else F.rms_norm(h64, shape, w64, 1e-6))
    ref_inputs = [t for t in (h64, w64, b64) if t is not None]
    g64 = torch.autograd.grad(y64, ref_inputs, dy_cpu.double())
    dh64 = g64[0] + (dh_cpu.double() if c.fused else 0)
    check("y", y.detach(), y64.detach(), y_dtype)
    check("y (inference)", y_inference, y64.detach(), y_dtype)
    check("dx", grads[0], dh64, dtype)
    if c.fused:
        check("h", h.detach(), (x_cpu.double() + r_cpu.double()).to(stream).double(), stream)
        check("dresidual", grads[1], dh64, stream)
    # dweight / dbias sum over M rows: their rounding grows with sqrt(M).
    param_tol = torch.float16 if pdtype == torch.float32 else pdtype
    names = [name for name, present in (("dweight", c.weight), ("dbias", c.bias)) if present]
    for name, g, g_ref in zip(names, grads[2 if c.fused else 1 :], g64[1:]):
        check(name, g, g_ref, param_tol)


def param_choices(op: str) -> list[tuple[bool, bool]]:
    """With and without weight and bias (RMSNorm has no bias)."""
    return [(True, True), (True, False), (False, True), (False, False)] if op.endswith("layer_norm") else [
        (True, False), (False, False)]


# The sweep's groups, one sanitizer process each: op and dtypes (x, then the parameters' dtype for
# the norm ops, the residual stream's for the fused ops, and y in x's dtype beside a float32 stream).
GROUP_DTYPES = {
    "norm": [("bfloat16", "bfloat16"), ("bfloat16", "float32"), ("float16", "float16"), ("float16", "float32"),
             ("float32", "float32"), ("float64", "float64")],
    "fused": [("bfloat16", "bfloat16"), ("float16", "float16"), ("float32", "float32"), ("float64", "float64"),
              ("bfloat16", "float32"), ("bfloat16", "float32", "y"), ("float16", "float32"),
              ("float16", "float32", "y")],
}


def sweep_groups() -> list[str]:
    groups = []
    for op in ("layer_norm", "rms_norm", "add_layer_norm", "add_rms_norm"):
        for dtypes in GROUP_DTYPES["fused" if op.startswith("add_") else "norm"]:
            groups.append(":".join((op, *dtypes)))
    return groups


def read_boundaries(path: str | None) -> dict[tuple, set[tuple[int, int, bool, bool]]]:
    """plan_boundaries' lines, by (planner kind, x bytes, parameter or stream bytes, norm, y bytes):
    the shapes and parameters at which a planner changes its answer, with their neighbours one row
    or one column away."""
    found: dict = {}
    if path is None:
        return found
    for line in open(path):
        planner, xb, pb, norm, w, b, rows, cols, yb = line.split()
        rows, cols = int(rows), int(cols)
        kind = "add" if planner.startswith("add_") else "norm"
        key = (kind, int(xb), int(pb), "layer_norm" if norm == "ln" else "rms_norm", int(yb))
        for m, n in ((rows, cols), (rows, cols - 1), (rows, cols + 1), (rows - 1, cols), (rows + 1, cols)):
            if m >= 1 and n >= 1 and not (m <= SMALL_ROWS and n <= SMALL_COLS):
                found.setdefault(key, set()).add((m, n, w == "1", b == "1"))
    return found


SIZES = {"bfloat16": 2, "float16": 2, "float32": 4, "float64": 8}


def sweep_cases(group: str, boundaries_file: str | None) -> list[NormCall]:
    """Every M <= 8 and N <= 64 with each choice of parameters, as a whole buffer and one element
    into a buffer (the unaligned paths); then every planner boundary shape of the group's dtypes
    (for the fused ops their own planner's, and the norm planner's at the widths they hand to the
    separate kernels: those that are not a multiple of the stream's pack)."""
    op, dtype, params, *rest = group.split(":")
    y_in_x = rest == ["y"]
    calls = []
    for M in range(1, SMALL_ROWS + 1):
        for N in range(1, SMALL_COLS + 1):
            for weight, bias in param_choices(op):
                for offset in (0, 1):
                    calls.append(NormCall(op, M, N, dtype, params, weight, bias, offset, y_in_x))
    norm = op.removeprefix("add_")
    xb, pb = SIZES[dtype], SIZES[params]
    found = read_boundaries(boundaries_file)
    if op.startswith("add_"):
        yb = xb if y_in_x else pb
        shapes = found.get(("add", xb, pb, norm, yb), set()) | {
            s for s in found.get(("norm", pb, pb, norm, pb), set()) if s[1] % (16 // pb) != 0}
    else:
        shapes = found.get(("norm", xb, pb, norm, xb), set())
    for M, N, weight, bias in sorted(shapes):
        calls.append(NormCall(op, M, N, dtype, params, weight, bias and norm == "layer_norm", 0, y_in_x))
    return calls


def family_cases() -> list[NormCall]:
    """One call of each kernel family at a shape typical for it (larger than the sweep's)."""
    bf16, fp16, fp32, fp64 = "bfloat16", "float16", "float32", "float64"
    calls = []
    for op in ("layer_norm", "rms_norm"):
        bias = op == "layer_norm"
        add = lambda M, N, dt, params=None, weight=True, offset=8: calls.append(  # noqa: E731
            NormCall(op, M, N, dt, params or dt, weight, bias and weight, offset))
        add(3, 4096, bf16)  # few rows, forward and backward
        add(5, 1024, fp32, weight=False, offset=4)
        add(4096, 512, bf16)  # fixed groups
        add(1024, 2048, bf16, fp32)  # bounded rows, float32 parameters
        add(160, 32768, bf16)  # 8-pack rows
        add(12, 65536 if bias else 131072, bf16)  # cluster rows
        add(6, 65535 if bias else 131071, fp16)  # cluster span rows
        add(300, 4095, bf16, fp32)  # span rows, float32 parameters
        add(64, 1023, fp64, offset=2)
        add(77, 760, bf16, offset=0)
        add(8192, 1024, bf16)  # staged backward
        add(2000, 4095, fp32, offset=4)  # staged backward, span rows
        add(2, 300001, fp32, offset=4)  # wide rows, two passes
        add(33, 1024, bf16, offset=9)  # unaligned pointers
        add(17, 1001, fp16, offset=9)
        add(0, 48, fp32, offset=4)  # no rows
        fused = lambda M, N, dt, stream=None, y_in_x=False, offset=8: calls.append(  # noqa: E731
            NormCall(f"add_{op}", M, N, dt, stream or dt, True, bias, offset, y_in_x))
        fused(300, 4096, bf16)
        fused(67, 6144, fp16)
        fused(257, 1024, bf16, fp32, offset=4)
        fused(300, 4096, bf16, fp32, True, offset=4)
        fused(70, 8192, fp16, fp32, True, offset=4)
        fused(129, 8, fp32, offset=4)
        fused(65, 512, fp64, offset=2)
        fused(33, 1001, fp16)  # add then norm (odd N)
        fused(0, 64, fp32, offset=4)
    return calls


def reference_ops_cases(group: str | None, boundaries: str | None, check_values: bool) -> list[Case]:
    calls = family_cases() if group in (None, "families") else sweep_cases(group, boundaries)
    return [Case(str(c), functools.partial(run_norm_call, c, check_values)) for c in calls]


# -----------------------------------------------------------------------------
# A generated project
# -----------------------------------------------------------------------------


def project_cases(package: str, op_name: str) -> list[Case]:
    module = importlib.import_module(package)
    op = getattr(module, op_name)
    reference = importlib.import_module(f"{package}.ops.{op_name}").reference  # the op's declaration, either kind
    shapes = [
        (1,),
        (7,),
        (3, 5, 33),
        (199, 760),
        (2, 1025),
        (64, 4099),
        (2053, 1031),
        (6, 4096),
        (3, 8191),
        (300, 8191),
        (5, 8192),
        (3, 16383),
        (3, 16384),
        (3, 32767),
        (8, 65537),
        (2, 65536),
        (2, 270001),
    ]
    scale = 0.75

    def supported(dtype) -> bool:
        try:
            op(torch.ones(2, dtype=dtype, device="cuda"), scale)
        except RuntimeError:
            return False
        return True

    def case(shape, dtype, offset_elems) -> Callable[[], None]:
        def run() -> None:
            x_cpu = random(shape, dtype, std=3.0)
            g_cpu = random(shape, dtype)
            x = tail_view(x_cpu, offset_elems).requires_grad_()
            g = tail_view(g_cpu, offset_elems)
            y = op(x, scale)
            (dx,) = torch.autograd.grad(y, x, g)
            torch.cuda.synchronize()
            x64 = x_cpu.double().requires_grad_()
            y64 = reference(x64, scale)
            (dx64,) = torch.autograd.grad(y64, x64, g_cpu.double())
            check("y", y.detach(), y64.detach(), dtype)
            check("dx", dx, dx64, dtype)

        return run

    cases = []
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
        if not supported(dtype):
            continue
        size = torch.tensor([], dtype=dtype).element_size()
        for shape in shapes:
            for label, offset in (
                ("aligned", ALIGNED_OFFSET_BYTES // size),
                ("offset by one element", 1),
            ):
                name = f"{op_name}: {str(dtype).removeprefix('torch.')} {'x'.join(map(str, shape))} {label}"
                cases.append(Case(name, case(shape, dtype, offset)))
    return cases


# -----------------------------------------------------------------------------


@contextmanager
def kernel_names(enabled: bool) -> Iterator[list[str]]:
    """The CUDA kernels launched inside the block (torch.profiler), when enabled."""
    names: list[str] = []
    if not enabled:
        yield names
        return
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        yield names
    names.extend(
        sorted(
            {
                e.name
                for e in prof.events()
                if e.device_type == torch.autograd.DeviceType.CUDA
            }
        )
    )


def cuda_alive() -> bool:
    """False once a kernel fault has left the CUDA context unusable."""
    try:
        return torch.ones(1, device="cuda").add_(1).item() == 2.0
    except Exception:  # noqa: BLE001  (any error: the context is gone)
        return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("target", choices=["reference_ops", "project"])
    parser.add_argument("--package", help="the generated project's package (target project)")
    parser.add_argument("--op", help="the generated project's op name (target project)")
    parser.add_argument("--group", help="reference_ops: 'families' (the default) or a sweep group (--list-groups)")
    parser.add_argument("--list-groups", action="store_true", help="print the sweep's groups and exit")
    parser.add_argument("--boundaries", help="reference_ops sweep: plan_boundaries' output")
    parser.add_argument("--no-check", action="store_true", help="run the calls without comparing their values")
    parser.add_argument("--coverage", action="store_true", help="print the kernels the cases launch")
    parser.add_argument("--start", type=int, default=0, help="skip the cases before this index")
    parser.add_argument("--stop", type=int, default=None, help="end before the case of this index")
    parser.add_argument("--until", type=float, default=None,
                        help="start no case after this time (seconds since the epoch); the run then ends normally")
    args = parser.parse_args()
    if args.list_groups:
        print("\n".join(["families", *sweep_groups()]))
        return 0
    if not torch.cuda.is_available():
        print("ERROR: no CUDA GPU: the sanitizer cases run on a GPU machine", file=sys.stderr)
        return 2
    if args.target == "project" and not (args.package and args.op):
        parser.error("target project needs --package and --op")
    if args.group not in (None, "families", *sweep_groups()):
        parser.error(f"unknown group {args.group!r}; --list-groups prints them")
    cases = (
        reference_ops_cases(args.group, args.boundaries, not args.no_check)
        if args.target == "reference_ops"
        else project_cases(args.package, args.op)
    )
    # A kernel fault ends the process (the CUDA context is lost): sanitize.py then starts again
    # after the case that faulted, which it finds from these lines.
    print(f"CASES {len(cases)}", flush=True)
    failed = ran = 0
    with kernel_names(args.coverage) as names:
        for index, case in enumerate(cases[args.start : args.stop], start=args.start):
            if args.until is not None and time.time() > args.until:
                print(f"DEADLINE before case {index}", flush=True)
                break
            print(f"CASE {index} START {case.family}", flush=True)
            ran += 1
            try:
                case.run()
                torch.cuda.synchronize()
            except Exception as error:  # noqa: BLE001  (reported per case; the run goes on)
                failed += 1
                print(f"CASE {index} FAILED {case.family}: {type(error).__name__}: {error}", flush=True)
                if not cuda_alive():
                    # Every later call would fail unchecked: end here, and sanitize.py goes on in a
                    # new process after this case.
                    print(f"CASE {index} LOST THE CUDA CONTEXT", flush=True)
                    return 3
                continue
            print(f"CASE {index} OK {case.family}", flush=True)
    for name in names:
        print(f"KERNEL {name}", flush=True)
    print(f"{ran - failed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
