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
import importlib
import sys
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
# 16 bytes: views at this offset keep the kernels' vector paths; one element off takes the others.
ALIGNED_OFFSET_BYTES = 16


def tail_view(values: torch.Tensor, offset_elems: int) -> torch.Tensor:
    """``values`` copied to the GPU as a view starting ``offset_elems`` elements into a buffer
    that ends exactly where the view ends."""
    buffer = torch.empty(
        offset_elems + values.numel(), dtype=values.dtype, device="cuda"
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


def norm_case(
    op: str, M: int, N: int, dtype, *, params="affine", offset=True, misalign=False
) -> Callable[[], None]:
    """One forward + backward and one inference call of ``op`` on an M x N input."""

    def run() -> None:
        import reference_ops

        gen = torch.Generator().manual_seed(M * 7919 + N)
        elems = (
            ALIGNED_OFFSET_BYTES // torch.tensor([], dtype=dtype).element_size()
            if offset
            else 0
        )
        elems += 1 if misalign else 0
        pdtype = torch.float32 if params == "float32" else dtype
        x_cpu = random((M, N), dtype, mean=1.0, std=1.5, generator=gen)
        dy_cpu = random((M, N), dtype, generator=gen)
        w_cpu = (
            random((N,), pdtype, mean=1.0, std=0.5, generator=gen)
            if params != "none"
            else None
        )
        b_cpu = (
            random((N,), pdtype, generator=gen)
            if params != "none" and op == "layer_norm"
            else None
        )
        leaves = [
            tail_view(t, elems) if t is not None else None
            for t in (x_cpu, w_cpu, b_cpu)
        ]
        for t in leaves:
            if t is not None:
                t.requires_grad_()
        dy = tail_view(dy_cpu, elems)

        def call(fn, x, w, b):
            return (
                fn.layer_norm(x, (N,), w, b, 1e-5)
                if op == "layer_norm"
                else fn.rms_norm(x, (N,), w, 1e-6)
            )

        y = call(reference_ops, *leaves)
        inputs = [t for t in leaves if t is not None]
        grads = torch.autograd.grad(y, inputs, dy)
        with torch.no_grad():
            y_inference = call(reference_ops, *leaves)
        torch.cuda.synchronize()

        ref_leaves = [
            t.double().requires_grad_() if t is not None else None
            for t in (x_cpu, w_cpu, b_cpu)
        ]
        functional = type(
            "F",
            (),
            {
                "layer_norm": staticmethod(F.layer_norm),
                "rms_norm": staticmethod(F.rms_norm),
            },
        )
        y_ref = call(functional, *ref_leaves)
        ref_inputs = [t for t in ref_leaves if t is not None]
        grads_ref = torch.autograd.grad(y_ref, ref_inputs, dy_cpu.double())
        check("y", y.detach(), y_ref.detach(), dtype)
        check("y (inference)", y_inference, y_ref.detach(), dtype)
        for name, g, g_ref in zip(("dx", "dweight", "dbias"), grads, grads_ref):
            # dweight / dbias sum over M rows: their rounding grows with sqrt(M).
            tol_dtype = (
                dtype
                if name == "dx"
                else torch.float16
                if dtype == torch.float32
                else dtype
            )
            check(name, g, g_ref, tol_dtype)

    return run


def add_norm_case(
    op: str,
    M: int,
    N: int,
    dtype,
    stream_dtype=None,
    *,
    offset=True,
    y_in_x_dtype=False,
) -> Callable[[], None]:
    """One forward + backward (gradients at both y and h) and one inference call of the fused
    residual op add_<op> on M x N inputs; the residual stream in ``stream_dtype`` (default x's);
    with ``y_in_x_dtype``, y (and dy) in x's dtype (out_dtype)."""
    stream_dtype = stream_dtype or dtype
    y_dtype = dtype if y_in_x_dtype else stream_dtype

    def run() -> None:
        import reference_ops

        gen = torch.Generator().manual_seed(M * 31 + N)
        elems = (
            ALIGNED_OFFSET_BYTES // torch.tensor([], dtype=dtype).element_size()
            if offset
            else 0
        )
        x_cpu = random((M, N), dtype, generator=gen)
        r_cpu = random((M, N), stream_dtype, mean=0.5, std=2.0, generator=gen)
        dy_cpu, dh_cpu = (
            random((M, N), y_dtype, generator=gen),
            random((M, N), stream_dtype, generator=gen),
        )
        w_cpu = random((N,), stream_dtype, mean=1.0, std=0.5, generator=gen)
        b_cpu = (
            random((N,), stream_dtype, generator=gen) if op == "layer_norm" else None
        )
        leaves = [
            tail_view(t, elems) if t is not None else None
            for t in (x_cpu, r_cpu, w_cpu, b_cpu)
        ]
        for t in leaves:
            if t is not None:
                t.requires_grad_()
        dy, dh = tail_view(dy_cpu, elems), tail_view(dh_cpu, elems)

        def call(x, r, w, b):
            out_dtype = dtype if y_in_x_dtype else None
            if op == "layer_norm":
                return reference_ops.add_layer_norm(
                    x, r, (N,), w, b, 1e-5, out_dtype=out_dtype
                )
            return reference_ops.add_rms_norm(x, r, (N,), w, 1e-6, out_dtype=out_dtype)

        y, h = call(*leaves)
        inputs = [t for t in leaves if t is not None]
        grads = torch.autograd.grad([y, h], inputs, [dy, dh])
        with torch.no_grad():
            y_inference, _ = call(*leaves)
        torch.cuda.synchronize()

        h_ref = (
            (x_cpu.double() + r_cpu.double()).to(stream_dtype).double().requires_grad_()
        )
        ref_params = [
            t.double().requires_grad_() for t in (w_cpu, b_cpu) if t is not None
        ]
        y_ref = (
            F.layer_norm(h_ref, (N,), *ref_params, 1e-5)
            if op == "layer_norm"
            else F.rms_norm(h_ref, (N,), *ref_params, 1e-6)
        )
        g_ref = torch.autograd.grad(y_ref, [h_ref, *ref_params], dy_cpu.double())
        dsum_ref = g_ref[0] + dh_cpu.double()
        check("h", h.detach(), h_ref.detach(), stream_dtype)
        check("y", y.detach(), y_ref.detach(), y_dtype)
        check("y (inference)", y_inference, y_ref.detach(), y_dtype)
        check("dx", grads[0], dsum_ref, dtype)
        check("dresidual", grads[1], dsum_ref, stream_dtype)
        for name, g, g_r in zip(("dweight", "dbias"), grads[2:], g_ref[1:]):
            check(
                name,
                g,
                g_r,
                torch.float16 if stream_dtype == torch.float32 else stream_dtype,
            )

    return run


def reference_ops_cases() -> list[Case]:
    bf16, fp16, fp32, fp64 = torch.bfloat16, torch.float16, torch.float32, torch.float64
    cases = []
    for op in ("layer_norm", "rms_norm"):
        add = lambda family, *args, **kw: cases.append(
            Case(f"{op}: {family}", norm_case(op, *args, **kw))
        )  # noqa: E731
        add("few rows (forward and backward)", 3, 4096, bf16)
        add("few rows, no parameters", 5, 1024, fp32, params="none")
        add("fixed groups", 4096, 512, bf16)
        add("bounded rows, float32 parameters", 1024, 2048, bf16, params="float32")
        add("unbounded 8-pack rows", 160, 32768, bf16)
        add("cluster rows", 12, 65536 if op == "layer_norm" else 131072, bf16)
        add(
            "cluster span rows (odd N)",
            6,
            65535 if op == "layer_norm" else 131071,
            fp16,
        )
        add("span rows (odd N), float32 parameters", 300, 4095, bf16, params="float32")
        add("span rows (N = 7)", 199, 7, fp16)
        add("span rows (N = 1)", 37, 1, fp32)
        add("span rows, float64", 64, 1023, fp64)
        add("span rows, no offset", 77, 760, bf16, offset=False)
        add("staged backward, aligned", 8192, 1024, bf16)
        add("staged backward, span rows", 2000, 4095, fp32)
        add("wide rows (two passes)", 2, 300001, fp32)
        add("unaligned pointers", 33, 1024, bf16, misalign=True)
        add("unaligned pointers, odd N", 17, 1001, fp16, misalign=True)
        add("zero rows", 0, 48, fp32)
        fused = lambda family, *args, **kw: cases.append(
            Case(f"add_{op}: {family}", add_norm_case(op, *args, **kw))
        )  # noqa: E731
        fused("fused residual", 300, 4096, bf16)
        fused("fused residual, two packs a thread", 67, 6144, fp16)
        fused("fused residual, float32 stream", 257, 1024, bf16, fp32)
        fused(
            "fused residual, float32 stream, bfloat16 y",
            300,
            4096,
            bf16,
            fp32,
            y_in_x_dtype=True,
        )
        fused(
            "fused residual, float32 stream, float16 y",
            70,
            8192,
            fp16,
            fp32,
            y_in_x_dtype=True,
        )
        fused("fused residual, narrow rows", 129, 8, fp32)
        fused("fused residual, float64", 65, 512, fp64)
        fused("add then norm (odd N)", 33, 1001, fp16)
        fused("fused residual, zero rows", 0, 64, fp32)
    return cases


# -----------------------------------------------------------------------------
# A generated project
# -----------------------------------------------------------------------------


def project_cases(package: str, op_name: str) -> list[Case]:
    module = importlib.import_module(package)
    op = getattr(module, op_name)
    reference = getattr(
        importlib.import_module(f"{package}.reference"), f"{op_name}_reference"
    )
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


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("target", choices=["reference_ops", "project"])
    parser.add_argument(
        "--package", help="the generated project's package (target project)"
    )
    parser.add_argument("--op", help="the generated project's op name (target project)")
    parser.add_argument(
        "--coverage", action="store_true", help="print the kernels each case launches"
    )
    parser.add_argument(
        "--start", type=int, default=0, help="skip the cases before this index"
    )
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print(
            "ERROR: no CUDA GPU: the sanitizer cases run on a GPU machine",
            file=sys.stderr,
        )
        return 2
    if args.target == "project" and not (args.package and args.op):
        parser.error("target project needs --package and --op")
    cases = (
        reference_ops_cases()
        if args.target == "reference_ops"
        else project_cases(args.package, args.op)
    )
    # A kernel fault ends the process (the CUDA context is lost): sanitize.py then starts again
    # after the case that faulted, which it finds from these lines.
    print(f"CASES {len(cases)}", flush=True)
    failed = 0
    for index, case in enumerate(cases[args.start :], start=args.start):
        print(f"CASE {index} START {case.family}", flush=True)
        try:
            with kernel_names(args.coverage) as names:
                case.run()
                torch.cuda.synchronize()
        except Exception as error:  # noqa: BLE001  (reported per case; the run goes on)
            failed += 1
            print(
                f"CASE {index} FAILED {case.family}: {type(error).__name__}: {error}",
                flush=True,
            )
            continue
        print(f"CASE {index} OK {case.family}", flush=True)
        for name in names:
            print(f"KERNEL {name}", flush=True)
    ran = len(cases) - args.start
    print(f"{ran - failed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
