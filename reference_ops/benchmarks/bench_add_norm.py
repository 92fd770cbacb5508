#!/usr/bin/env python
"""Bandwidth of the fused residual ops (reference_ops.add_rms_norm / add_layer_norm) against torch
eager (h = x + residual, then F.rms_norm / F.layer_norm) and torch.compile of the same function.

Timing as bench.py (CUDA-graph replays, interleaved rounds, copy bandwidth from the same run).
Bytes counted are those the fused op must move:
  forward   read x and residual, write h and y:          M*N*(sx + 2*sr + sy)
  backward  read dy, dh and h, write dresidual (and dx
            when x is narrower than the residual stream): M*N*(sy + 3*sr [+ sx])
(sx, sr, sy: element sizes of x, of the residual stream and of y). Backward time = time(forward with
statistics + backward) - time(no_grad forward). Every result is checked against float64 first.
The few-row shapes (decode steps: a residual of less than LATENCY_BYTES) measure latency: 20 calls
a graph, microseconds per call, no % of copy. Last, ours' bandwidth figures against the target
(>= 90 % of copy: met / missed) and against torch.compile's in the same run; the exit status is 1
only for a wrong result.

Usage: python benchmarks/bench_add_norm.py [--ops rms_norm,layer_norm] [--pairs bf16,bf16+fp32,fp32]
       [--shapes MxN,...] [--no-compile] [--no-latency] [--replays N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import bench  # noqa: E402

import reference_ops  # noqa: E402

SHAPES = [(65536, 1024), (16384, 4096), (8192, 8192), (32768, 512)]
# Decode-sized calls (batch 1-64 at d = 512 and 4096): their time is latency, not bandwidth.
LATENCY_SHAPES = [(1, 512), (8, 512), (64, 512), (1, 4096), (8, 4096), (64, 4096)]
LATENCY_BYTES = 8 << 20
# x's dtype + the residual stream's ("bf16+fp32": LLaMA-style float32 stream under autocast), and
# y's when it is not the stream's ("/bf16": out_dtype, as the fused modules give y under autocast).
PAIRS = {
    "bf16": (torch.bfloat16, torch.bfloat16, None),
    "fp16": (torch.float16, torch.float16, None),
    "fp32": (torch.float32, torch.float32, None),
    "bf16+fp32": (torch.bfloat16, torch.float32, None),
    "bf16+fp32/bf16": (torch.bfloat16, torch.float32, torch.bfloat16),
}
REL_TOL = {torch.bfloat16: 1e-2, torch.float16: 2e-3, torch.float32: 1e-5}
EPS = 1e-5
PCT_KEYS = ("fwd_pct_copy", "bwd_pct_copy")
# The fused ops' target: at least this % of copy bandwidth on the bytes they must move, both ways.
TARGET_PCT = 90.0


def functions(op: str, n: int, compile_fn: bool, y_dtype=None) -> dict:
    def eager(x, r, w, b):
        h = x + r
        y = F.layer_norm(h, (n,), w, b, EPS) if op == "layer_norm" else F.rms_norm(h, (n,), w, EPS)
        return (y if y_dtype is None else y.to(y_dtype)), h

    def ours(x, r, w, b):
        if op == "layer_norm":
            return reference_ops.add_layer_norm(x, r, (n,), w, b, EPS, out_dtype=y_dtype)
        return reference_ops.add_rms_norm(x, r, (n,), w, EPS, out_dtype=y_dtype)

    fns = {"ours": ours, "eager": eager}
    if compile_fn:
        # Each case compiles its own closure (n and the dtypes are constants of its graph); without a
        # reset, the cases' graphs pile up on one code object and pass dynamo's recompile limit.
        torch._dynamo.reset()
        fns["compile"] = torch.compile(eager, fullgraph=True, dynamic=False)
    return fns


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    return ((out.double() - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def bench_case(op, pair, m, n, compile_fn, copy_gbps, replays):
    x_dtype, r_dtype, y_dtype = PAIRS[pair]
    torch.manual_seed(m + n)
    x = torch.randn(m, n, device="cuda").to(x_dtype).requires_grad_()
    r = (torch.randn(m, n, device="cuda") * 2).to(r_dtype).requires_grad_()
    w = (torch.randn(n, device="cuda") * 0.5 + 1).to(r_dtype).requires_grad_()
    b = torch.randn(n, device="cuda").to(r_dtype).requires_grad_() if op == "layer_norm" else None
    dy = torch.randn(m, n, device="cuda").to(y_dtype or r_dtype)
    dh = torch.randn(m, n, device="cuda").to(r_dtype)
    leaves = [t for t in (x, r, w, b) if t is not None]

    # float64 reference from the same inputs.
    ref = [t.detach().double().requires_grad_() for t in leaves]
    y_ref, h_ref = functions(op, n, False)["eager"](ref[0], ref[1], ref[2], ref[3] if b is not None else None)
    g_ref = torch.autograd.grad([y_ref, h_ref], ref, [dy.double(), dh.double()])
    fns = functions(op, n, compile_fn, y_dtype)
    latency = m * n * r.element_size() < LATENCY_BYTES
    calls = 20 if latency else 1
    errs = {}
    for impl, fn in fns.items():
        y, h = fn(x, r, w, b)
        grads = torch.autograd.grad([y, h], leaves, [dy, dh])
        errs[impl] = max([rel_err(y, y_ref.detach())] + [rel_err(g, gr) for g, gr in zip(grads, g_ref, strict=False)])
        del y, h, grads

    timers = {}
    for impl, fn in fns.items():

        def fwd(fn=fn):
            with torch.no_grad():
                fn(x, r, w, b)

        def fwd_bwd(fn=fn):
            y, h = fn(x, r, w, b)
            torch.autograd.grad([y, h], leaves, [dy, dh])

        timers[impl] = (bench.GraphTimer(fwd, calls), bench.GraphTimer(fwd_bwd, calls))
    times = {impl: ([], []) for impl in fns}
    per_round = max(1, -(-replays // bench.ROUNDS))
    for _ in range(bench.ROUNDS):
        for impl, (t_fwd, t_all) in timers.items():
            times[impl][0].extend(t_fwd.sample(per_round))
            times[impl][1].extend(t_all.sample(per_round))
    del timers

    sx, sr = x.element_size(), r.element_size()
    sy = (y_dtype or r_dtype).itemsize
    fwd_bytes = m * n * (sx + 2 * sr + sy)
    bwd_bytes = m * n * (sy + 3 * sr + (sx if sx != sr else 0))
    rows = []
    for impl in fns:
        t_fwd = statistics.median(times[impl][0])
        t_bwd = max(statistics.median(times[impl][1]) - t_fwd, 1e-9)
        rows.append(
            dict(
                op=f"add_{op}",
                pair=pair,
                M=m,
                N=n,
                impl=impl,
                fwd_us=t_fwd * 1e3,
                bwd_us=t_bwd * 1e3,
                fwd_pct_copy=100 * fwd_bytes / (t_fwd * 1e-3) / 1e9 / copy_gbps,
                bwd_pct_copy=100 * bwd_bytes / (t_bwd * 1e-3) / 1e9 / copy_gbps,
                max_rel_err=errs[impl],
                latency_case=latency,
                ok=errs[impl] <= REL_TOL[x_dtype],
            )
        )
    torch.cuda.empty_cache()
    return rows


def target_lines(rows: list[dict]) -> list[str]:
    """Ours' bandwidth figures marked against the target (>= TARGET_PCT % of copy, forward and backward) and
    against torch.compile's figure in the same run, where it was timed; the decode-sized rows, which measure
    latency, are left out."""
    figures: dict[str, dict[tuple, float]] = {}
    for r in rows:
        if not r["latency_case"]:
            for key in PCT_KEYS:
                figures.setdefault(r["impl"], {})[(r["op"], r["pair"], r["M"], r["N"], key[:3])] = r[key]
    ours = figures.get("ours", {})
    if not ours:
        return []

    def name(k: tuple) -> str:
        op, pair, m, n, way = k
        return f"{op} {pair} {m}x{n} {way} {ours[k]:.1f}"

    below = [name(k) for k, pct in ours.items() if pct < TARGET_PCT]
    lines = [
        f"target >= {TARGET_PCT:.0f} % of copy: {len(ours) - len(below)} of {len(ours)} figures met"
        + (f"; missed: {', '.join(below)}" if below else "")
    ]
    compiled = {k: pct for k, pct in figures.get("compile", {}).items() if k in ours}
    if compiled:
        behind = [f"{name(k)} < {pct:.1f}" for k, pct in compiled.items() if ours[k] < pct]
        listed = f": {', '.join(behind)}" if behind else ""
        lines.append(f"torch.compile ahead in {len(behind)} of {len(compiled)} figures{listed}")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ops", default="rms_norm,layer_norm")
    parser.add_argument("--pairs", default=",".join(PAIRS))
    parser.add_argument("--shapes", help=f"e.g. 16384x4096,8192x8192 (default: {SHAPES})")
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--no-latency", action="store_true", help="skip the few-row shapes")
    parser.add_argument("--replays", type=int, default=30)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("bench_add_norm: needs a CUDA GPU", file=sys.stderr)
        return 2
    if args.shapes:
        shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    else:
        shapes = SHAPES + ([] if args.no_latency else LATENCY_SHAPES)
    copy_gbps = bench.copy_bandwidth_gbps()
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, copy {copy_gbps:.0f} GB/s")
    print(
        f"{'op':<16} {'x+stream':<10} {'M x N':<12} {'impl':<8} {'fwd us':>9} {'fwd %copy':>9} {'bwd us':>9}"
        f" {'bwd %copy':>9}  check"
    )
    failed = 0
    rows = []
    for op in args.ops.split(","):
        for pair in args.pairs.split(","):
            for m, n in shapes:
                for row in bench_case(op, pair, m, n, not args.no_compile, copy_gbps, args.replays):
                    rows.append(row)
                    failed += not row["ok"]
                    pct = [f"{row[k]:>9.1f}" if not row["latency_case"] else f"{'-':>9}" for k in PCT_KEYS]
                    print(
                        f"{row['op']:<16} {pair:<10} {f'{m}x{n}':<12} {row['impl']:<8} {row['fwd_us']:>9.2f}"
                        f" {pct[0]} {row['bwd_us']:>9.2f} {pct[1]}"
                        f"  {'ok' if row['ok'] else 'WRONG {:.2e}'.format(row['max_rel_err'])}",
                        flush=True,
                    )
    for line in target_lines(rows):
        print(line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
