#!/usr/bin/env python
"""Forward / backward bandwidth of reference_ops.layer_norm and rms_norm against torch eager
(F.layer_norm / F.rms_norm) and torch.compile of the same function.

Method:
  * copy bandwidth measured in the same run: dst.copy_(src) on 1 GiB, counting read + write;
  * each timed call is captured in a CUDA graph, replays timed with CUDA events, median; the
    replays are queued back to back behind an untimed one, so the GPU is busy when each start
    event is reached and the host's launch of a graph (5-11 us on an H100, found idle on the GPU
    between the start event and the kernel when every replay waited for the one before) is not
    timed: the events time the GPU's work;
    the replays run in rounds interleaved across ours / eager / compile (a transient slowdown
    of the GPU falls on all three);
  * forward bytes 2*M*N*s (read x, write y); backward bytes 3*M*N*s (read x, dy; write dx);
    the forward is timed under no_grad (ours then runs the inference op, which writes no
    mean / rstd, as torch.compile's forward does not); backward time = time(forward with
    statistics + autograd backward incl. dweight/dbias) - time(no_grad forward);
  * the large shapes move >= 256 MiB per forward call (no L2 reuse); the few-row shapes
    measure latency (reported in microseconds); a copy of one forward call's bytes, timed the
    same way, shows the ceiling at that call size (same_bytes_copy_pct);
  * every result (y, dx, dweight, dbias) is checked against a float64 reference each run.

Usage: python benchmarks/bench.py [--dtypes bf16,fp16,fp32] [--ops layer_norm,rms_norm]
       [--shapes MxN,...] [--no-compile] [--no-latency] [--replays N] [--out DIR]
Writes bench.csv and (when matplotlib is available) bench.png to --out.
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import reference_ops  # noqa: E402

LARGE_SHAPES = [
    (131072, 512),
    (65536, 1024),
    (32768, 2048),
    (16384, 4096),
    (8192, 8192),
    (4096, 16384),
    (2048, 32768),
    (1024, 65536),
    (16416, 4095),  # odd-width neighbours; M chosen so a call still moves >= 256 MiB
    (8208, 8191),
]
LATENCY_SHAPES = [(1, 4096), (8, 4096), (64, 4096), (64, 1024), (1024, 4096)]
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
# Relative error (||out - ref|| / ||ref||) accepted against the float64 reference.
REL_TOL = {torch.bfloat16: 1e-2, torch.float16: 2e-3, torch.float32: 1e-5}
EPS = 1e-5
# Timed replays are split over this many rounds, interleaved across implementations.
ROUNDS = 3


class GraphTimer:
    """fn() captured calls_per_graph times in one CUDA graph; sample() times replays."""

    def __init__(self, fn, calls_per_graph: int):
        self.calls = calls_per_graph
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                fn()
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            for _ in range(calls_per_graph):
                fn()
        self.graph.replay()
        torch.cuda.synchronize()

    def sample(self, replays: int) -> list[float]:
        """Milliseconds per fn() call, one value per replay."""
        return _timed_back_to_back(self.graph.replay, replays, self.calls)


def _timed_back_to_back(launch, replays: int, calls: int = 1) -> list[float]:
    """Milliseconds per call of each of `replays` launches queued back to back behind an untimed
    one: the GPU never waits for the host, so each pair of events brackets the GPU's work alone."""
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(replays)]
    launch()
    for start, end in events:
        start.record()
        launch()
        end.record()
    torch.cuda.synchronize()
    return [start.elapsed_time(end) / calls for start, end in events]


def median_ms(fn, calls_per_graph: int, replays: int) -> float:
    """Median time of one fn() call: fn captured calls_per_graph times in a CUDA graph."""
    return statistics.median(GraphTimer(fn, calls_per_graph).sample(replays))


def eager_median_ms(fn, replays: int) -> float:
    """Median time of one fn() call launched eagerly, timed with CUDA events, back to back."""
    for _ in range(3):
        fn()
    return statistics.median(_timed_back_to_back(fn, replays))


def copy_bandwidth_gbps() -> float:
    """dst.copy_(src) on 1 GiB, read + write. A copy captured in a CUDA graph may run on a copy
    engine instead of the SMs (2.7 vs 4.2 TB/s seen on one H200), so the ceiling is the faster of
    the graphed and the eagerly launched copy."""
    n = (1 << 30) // 4
    src = torch.randn(n, device="cuda")
    dst = torch.empty_like(src)
    graphed = median_ms(lambda: dst.copy_(src), 1, 50)
    eager = eager_median_ms(lambda: dst.copy_(src), 50)
    print(f"copy of 1 GiB: {graphed:.3f} ms in a CUDA graph, {eager:.3f} ms launched eagerly", flush=True)
    return 2 * (1 << 30) / (min(graphed, eager) * 1e-3) / 1e9


_SAME_BYTES_COPY: dict[int, float] = {}


def same_bytes_copy_pct(nbytes: int, copy_gbps: float, replays: int) -> float:
    """dst.copy_(src) of `nbytes` (one forward call's read + write), timed like the ops, as a % of
    the 1 GiB copy bandwidth: the ceiling a call of that size reaches under this method (ramp-up
    and tail are a larger share of a shorter call)."""
    cache = _SAME_BYTES_COPY
    if nbytes not in cache:
        src = torch.empty(nbytes, dtype=torch.uint8, device="cuda").random_()
        dst = torch.empty_like(src)
        graphed = median_ms(lambda: dst.copy_(src), 1, replays)
        eager = eager_median_ms(lambda: dst.copy_(src), replays)
        cache[nbytes] = 100 * 2 * nbytes / (min(graphed, eager) * 1e-3) / 1e9 / copy_gbps
        del src, dst
    return cache[nbytes]


def make_fns(op: str, n: int, compile_fn: bool):
    if op == "layer_norm":
        ours = lambda x, w, b: reference_ops.layer_norm(x, (n,), w, b, EPS)  # noqa: E731
        eager = lambda x, w, b: F.layer_norm(x, (n,), w, b, EPS)  # noqa: E731
    else:
        ours = lambda x, w, b: reference_ops.rms_norm(x, (n,), w, EPS)  # noqa: E731
        eager = lambda x, w, b: F.rms_norm(x, (n,), w, EPS)  # noqa: E731
    fns = {"ours": ours, "eager": eager}
    if compile_fn:
        if op == "layer_norm":

            def compiled_src(x, w, b):
                return F.layer_norm(x, (n,), w, b, EPS)

        else:

            def compiled_src(x, w, b):
                return F.rms_norm(x, (n,), w, EPS)

        fns["compile"] = torch.compile(compiled_src, fullgraph=True, dynamic=False)
    return fns


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    out = out.double()
    if not torch.isfinite(out).all():
        return float("inf")
    return ((out - ref).norm() / ref.norm()).item()


def bench_case(op, dtype, m, n, compile_fn, copy_gbps, replays):
    torch.manual_seed(m * 131 + n)
    x = (torch.randn(m, n, device="cuda") * 1.5 + 0.5).to(dtype).requires_grad_()
    w = (torch.randn(n, device="cuda") * 0.5 + 1.0).to(dtype).requires_grad_()
    b = torch.randn(n, device="cuda").to(dtype).requires_grad_() if op == "layer_norm" else None
    dy = torch.randn(m, n, device="cuda").to(dtype)
    params = [t for t in (x, w, b) if t is not None]

    # float64 reference (once per case)
    ref_leaves = [t.detach().double().requires_grad_() for t in params]
    ref_fn = make_fns(op, n, False)["eager"]
    y_ref = ref_fn(ref_leaves[0], ref_leaves[1], ref_leaves[2] if b is not None else None)
    g_ref = torch.autograd.grad(y_ref, ref_leaves, dy.double())
    y_ref = y_ref.detach()

    s = x.element_size()
    latency = m * n * s * 2 < (256 << 20)
    calls = 20 if latency else 1
    fns = make_fns(op, n, compile_fn)
    checks = {}
    for impl, fn in fns.items():
        t0 = time.perf_counter()
        y = fn(x, w, b)
        grads = torch.autograd.grad(y, params, dy)
        torch.cuda.synchronize()
        first_call_s = time.perf_counter() - t0
        err = max([rel_err(y, y_ref)] + [rel_err(g, r) for g, r in zip(grads, g_ref, strict=False)])
        checks[impl] = (err, first_call_s)
        del y, grads

    # Every implementation's graphs are captured first, then replayed in ROUNDS
    # interleaved rounds, so a transient slowdown of the GPU falls on all of them.
    timers = {}
    for impl, fn in fns.items():

        def fwd(fn=fn):
            with torch.no_grad():
                fn(x, w, b)

        def fwd_bwd(fn=fn):
            y = fn(x, w, b)
            torch.autograd.grad(y, params, dy)

        timers[impl] = (GraphTimer(fwd, calls), GraphTimer(fwd_bwd, calls))
    times = {impl: ([], []) for impl in fns}
    per_round = max(1, -(-replays // ROUNDS))
    for _ in range(ROUNDS):
        for impl, (t_fwd, t_all) in timers.items():
            times[impl][0].extend(t_fwd.sample(per_round))
            times[impl][1].extend(t_all.sample(per_round))
    del timers

    same_copy = None if latency else same_bytes_copy_pct(m * n * s, copy_gbps, replays)
    rows = []
    for impl in fns:
        err, first_call_s = checks[impl]
        t_fwd = statistics.median(times[impl][0])
        t_bwd = max(statistics.median(times[impl][1]) - t_fwd, 1e-9)
        fwd_gbps = 2 * m * n * s / (t_fwd * 1e-3) / 1e9
        bwd_gbps = 3 * m * n * s / (t_bwd * 1e-3) / 1e9
        rows.append(
            dict(
                op=op,
                dtype=str(dtype).replace("torch.", ""),
                M=m,
                N=n,
                impl=impl,
                fwd_us=t_fwd * 1e3,
                bwd_us=t_bwd * 1e3,
                fwd_GBps=fwd_gbps,
                bwd_GBps=bwd_gbps,
                fwd_pct_copy=100 * fwd_gbps / copy_gbps,
                bwd_pct_copy=100 * bwd_gbps / copy_gbps,
                max_rel_err=err,
                ok=err <= REL_TOL[dtype],
                latency_case=latency,
                same_bytes_copy_pct=same_copy,
                first_call_s=first_call_s,
            )
        )
    torch.cuda.empty_cache()
    return rows


def print_table(rows, copy_gbps):
    print(f"\ncopy bandwidth (read + write, 1 GiB): {copy_gbps:.0f} GB/s")
    print("large shapes: GB/s (% of copy bandwidth); few-row shapes: microseconds per call")
    for nbytes, pct in sorted(_SAME_BYTES_COPY.items()):
        mib = nbytes / 2**20
        print(f"a copy of {mib:.1f} MiB (one forward call's read + write) timed like the ops: {pct:.0f}% of it")
    hdr = (
        f"{'op':<10} {'dtype':<8} {'MxN':>12} | {'ours fwd':>15} {'ours bwd':>15} | {'eager fwd':>15}"
        f" {'eager bwd':>15} | {'compile fwd':>15} {'compile bwd':>15} | ok"
    )
    print(hdr)
    print("-" * len(hdr))
    keyed = {}
    for r in rows:
        keyed.setdefault((r["op"], r["dtype"], r["M"], r["N"]), {})[r["impl"]] = r
    for (op, dtype, m, n), impls in keyed.items():
        cells = []
        for impl in ("ours", "eager", "compile"):
            r = impls.get(impl)
            for d in ("fwd", "bwd"):
                if r is None:
                    cells.append(f"{'-':>15}")
                elif r["latency_case"]:
                    cells.append(f"{r[d + '_us']:>12.1f} us")
                else:
                    cells.append(f"{r[d + '_GBps']:>7.0f} ({r[d + '_pct_copy']:>3.0f}%)")
        ok = all(r["ok"] for r in impls.values())
        print(
            f"{op:<10} {dtype:<8} {f'{m}x{n}':>12} | {cells[0]} {cells[1]} | {cells[2]} {cells[3]}"
            f" | {cells[4]} {cells[5]} | {'ok' if ok else 'FAIL'}"
        )


def plot(rows, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not available: no plot")
        return
    large = [r for r in rows if not r["latency_case"]]
    panels = sorted({(r["op"], r["dtype"]) for r in large})
    if not panels:
        return
    fig, axes = plt.subplots(2, len(panels), figsize=(4.5 * len(panels), 7), squeeze=False)
    for col, (op, dtype) in enumerate(panels):
        for row, d in enumerate(("fwd", "bwd")):
            ax = axes[row][col]
            for impl, style in (("ours", "o-"), ("eager", "s--"), ("compile", "^:")):
                pts = [r for r in large if r["op"] == op and r["dtype"] == dtype and r["impl"] == impl]
                if pts:
                    ax.plot([f"{r['M']}x{r['N']}" for r in pts], [r[d + "_pct_copy"] for r in pts], style, label=impl)
            ax.set_title(f"{op} {dtype} {d}")
            ax.set_ylabel("% of copy bandwidth")
            ax.set_ylim(0, 110)
            ax.tick_params(axis="x", rotation=70, labelsize=7)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dtypes", default="bf16,fp16,fp32")
    parser.add_argument("--ops", default="layer_norm,rms_norm")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile column")
    parser.add_argument("--replays", type=int, default=30, help="timed graph replays per measurement")
    parser.add_argument("--no-latency", action="store_true", help="skip the few-row shapes")
    parser.add_argument("--shapes", help="only these shapes, e.g. 16416x4095,1x4096 (default: all)")
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("bench.py needs a CUDA GPU")
    for name in ("recompile_limit", "cache_size_limit"):
        if hasattr(torch._dynamo.config, name):
            setattr(torch._dynamo.config, name, 10_000)
    replays = args.replays
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    copy_gbps = copy_bandwidth_gbps()
    print(f"copy bandwidth: {copy_gbps:.0f} GB/s", flush=True)
    shapes = LARGE_SHAPES + ([] if args.no_latency else LATENCY_SHAPES)
    if args.shapes:
        shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    rows = []
    started = time.perf_counter()
    for op in args.ops.split(","):
        for dname in args.dtypes.split(","):
            for m, n in shapes:
                case = bench_case(op, DTYPES[dname], m, n, not args.no_compile, copy_gbps, replays)
                rows.extend(case)
                brief = " ".join(
                    f"{r['impl']}:{r['fwd_pct_copy']:.0f}%/{r['bwd_pct_copy']:.0f}%{'' if r['ok'] else ' FAIL'}"
                    for r in case
                )
                print(f"[{time.perf_counter() - started:6.0f}s] {op} {dname} {m}x{n} {brief}", flush=True)
    os.makedirs(args.out, exist_ok=True)
    csv_path = os.path.join(args.out, "bench.csv")
    with open(csv_path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {csv_path}")
    plot(rows, os.path.join(args.out, "bench.png"))
    print_table(rows, copy_gbps)
    if not all(r["ok"] for r in rows):
        sys.exit("some results differ from the float64 reference")


if __name__ == "__main__":
    main()
