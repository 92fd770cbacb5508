"""Times each op of the package against its reference (the same math) in eager PyTorch and under
torch.compile. The inputs, scalars and byte counts come from each op's declaration (ops/<op>.py).

Each call is captured in a CUDA graph and its replays are timed with CUDA events (median). The
replays are queued back to back, so the GPU never waits for the host to launch the next one: the
figures are GPU time, not Python or launch overhead. The implementations take turns over 3 rounds
(--rounds), each capturing new graphs (so new output buffers), and each figure is the median of its
rounds: a kernel at the bandwidth limit can run slower in one capture than in the next (one capture
of a bfloat16 forward can read well below the others' share of copy bandwidth). The figures are
reported as GB/s over the fewest bytes each direction must move (forward: read the inputs, write
the outputs; backward: read the outputs' gradients and the saved tensors, write the inputs'
gradients) and as a percentage of the device-to-device copy bandwidth measured in the same
run. The backward's time is what a training step adds to its forward: forward plus backward, less
the forward run in grad mode. torch.compile compiles each dtype and shape for its static shape, as
for a model whose shapes do not change. Two closing lines count the op's figures that reach at
least 90 % of copy bandwidth and name those where torch.compile's is higher, per op.

The per-call host cost (Python, dispatcher, input checks and launch, measured on a one-row tensor
where the GPU keeps up; the median of 7 rounds) is printed beside eager PyTorch's: it is what a
small input costs.

    python benchmarks/benchmark.py                       # every op, default shapes, every built dtype
    python benchmarks/benchmark.py --op scaled_gelu
    python benchmarks/benchmark.py --dtype bfloat16 --shape 8192x8192 --shape 65536x1024
    python benchmarks/benchmark.py --csv results.csv --plot results.png   # --plot: pip install '.[plot]'
"""

from __future__ import annotations

import argparse
import csv
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch

import my_cuda_op as package

BUILT_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
DTYPES = {str(dtype).removeprefix("torch."): dtype for dtype in BUILT_DTYPES}
DEFAULT_SHAPES = ["65536x1024", "16384x4096", "8192x8192", "4096x16384", "8191x8191"]
COPY_BYTES = 1 << 30
HOST_CALLS = 200
HOST_ROUNDS = 7
GPU_ROUNDS = 3
# A memory-bound kernel that moves this share of the copy bandwidth is near its limit; the closing
# lines count the figures that reach it.
TARGET_PCT = 90.0
# CSV columns: one row per dtype, shape and implementation (host_us is per dtype and implementation).
COLUMNS = ["op", "dtype", "shape", "impl", "fwd_us", "fwd_gbs", "fwd_pct_copy", "bwd_us", "bwd_gbs", "bwd_pct_copy"]
COLUMNS += ["host_us", "copy_gbs", "device", "torch"]


def time_ms(fn: Callable[[], object], replays: int) -> float:
    """Median GPU time of one call of fn, from CUDA-graph replays timed with CUDA events."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):  # warm-up: compilation, autotuning, allocator growth
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    graph.replay()
    return back_to_back_ms(graph.replay, replays)


def eager_time_ms(fn: Callable[[], object], replays: int) -> float:
    """Median GPU time of one eagerly launched call of fn, timed with CUDA events."""
    for _ in range(3):
        fn()
    return back_to_back_ms(fn, replays)


def back_to_back_ms(launch: Callable[[], object], replays: int) -> float:
    """Median of `replays` launches, each between two CUDA events, all queued behind an untimed
    one before waiting: the GPU is busy when each start event is reached, so the host's launch
    latency (several microseconds a graph) is not timed."""
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(replays)]
    launch()
    for start, end in events:
        start.record()
        launch()
        end.record()
    torch.cuda.synchronize()
    return statistics.median(start.elapsed_time(end) for start, end in events)


def copy_bandwidth(replays: int) -> float:
    """Device-to-device copy bandwidth in GB/s, counting bytes read plus bytes written.

    A copy captured in a CUDA graph may run on a copy engine instead of the SMs, which is slower
    on some machines, so the ceiling is the faster of the graphed and the eagerly launched copy.
    """
    src = torch.empty(COPY_BYTES, dtype=torch.uint8, device="cuda").random_()
    dst = torch.empty_like(src)
    copy = lambda: dst.copy_(src)  # noqa: E731
    ms = min(time_ms(copy, replays), eager_time_ms(copy, replays))
    return 2 * COPY_BYTES / ms / 1e6


def forward_and_backward(fn, inputs, grad_outputs):
    """Closures timing the forward alone (no grad), the forward as a training step runs it (grad
    mode; under torch.compile that can be another kernel) and that plus the autograd backward."""
    wanted = [x for x in inputs if x.requires_grad]

    def forward():
        with torch.no_grad():
            return fn(*inputs)

    def training_forward():
        return fn(*inputs)

    def forward_backward():
        outputs = fn(*inputs)
        return torch.autograd.grad(outputs if isinstance(outputs, tuple) else (outputs,), wanted, grad_outputs)

    return forward, training_forward, forward_backward


def host_us(
    implementations: dict[str, Callable], inputs: list, rounds: int = HOST_ROUNDS, calls: int = HOST_CALLS
) -> dict[str, float]:
    """Host time of one forward call in microseconds, per implementation: the time to queue `calls`
    calls on an input small enough that the GPU runs each faster than the host launches the next.
    The median of `rounds` rounds, each timing every implementation in turn (every other round in
    reverse order), so a spell of a busy host (torch.compile's worker processes, another program)
    falls on all of them alike and drops out of the median."""
    order = list(implementations.items())
    samples: dict[str, list[float]] = {name: [] for name, _ in order}
    with torch.no_grad():
        for _, fn in order:
            for _ in range(10):
                fn(*inputs)
        for r in range(rounds):
            for name, fn in order if r % 2 == 0 else order[::-1]:
                torch.cuda.synchronize()
                start = time.perf_counter()
                for _ in range(calls):
                    fn(*inputs)
                samples[name].append((time.perf_counter() - start) / calls * 1e6)
        torch.cuda.synchronize()
    return {name: statistics.median(times) for name, times in samples.items()}


def gpu_ms(
    implementations: dict[str, Callable], inputs: list, grad_outputs: list, rounds: int, replays: int
) -> dict[str, tuple[float, float]]:
    """(forward ms, backward ms) per implementation: the median of `rounds` rounds, each timing
    every implementation in turn (every other round in reverse order) in graphs captured anew."""
    order = list(implementations.items())
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in order}
    for r in range(rounds):
        for name, fn in order if r % 2 == 0 else order[::-1]:
            forward, training_forward, forward_backward = forward_and_backward(fn, inputs, grad_outputs)
            fwd_ms = time_ms(forward, replays)
            train_ms = time_ms(training_forward, replays)  # the backward: what training adds to it
            samples[name].append((fwd_ms, max(time_ms(forward_backward, replays) - train_ms, 1e-6)))
    return {
        name: (statistics.median(f for f, _ in times), statistics.median(b for _, b in times))
        for name, times in samples.items()
    }


def write_csv(rows: list[dict], path: Path) -> None:
    with Path(path).open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)


def plot(rows: list[dict], path: Path) -> None:
    """GB/s against shape, one line per implementation: a row of panels per dtype, forward on the
    left and backward on the right, the measured copy bandwidth as a dashed ceiling."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SystemExit("--plot needs matplotlib: pip install '.[plot]' (or pip install matplotlib)") from None
    dtypes = list(dict.fromkeys((row["op"], row["dtype"]) for row in rows))
    fig, axes = plt.subplots(len(dtypes), 2, figsize=(12, 3.5 * len(dtypes)), squeeze=False)
    for axes_row, (op, dtype) in zip(axes, dtypes, strict=True):
        these = [row for row in rows if (row["op"], row["dtype"]) == (op, dtype)]
        shapes = list(dict.fromkeys(row["shape"] for row in these))
        for ax, direction in zip(axes_row, ("fwd", "bwd"), strict=True):
            for impl in dict.fromkeys(row["impl"] for row in these):
                by_shape = {row["shape"]: float(row[f"{direction}_gbs"]) for row in these if row["impl"] == impl}
                ax.plot(shapes, [by_shape.get(shape, float("nan")) for shape in shapes], marker="o", label=impl)
            ax.axhline(float(these[0]["copy_gbs"]), color="gray", linestyle="--", label="copy")
            ax.set_title(f"{op} {dtype} {'forward' if direction == 'fwd' else 'backward'}")
            ax.set_xlabel("shape (rows x cols)")
            ax.set_ylabel("GB/s")
            ax.set_ylim(bottom=0)
            ax.tick_params(axis="x", labelrotation=30)
            ax.legend()
    fig.suptitle(f"{rows[0]['device']}, torch {rows[0]['torch']}")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def summary(rows: list[dict], op: str) -> list[str]:
    """The closing lines: how many of op's figures (forward and backward, each dtype and shape) reach
    TARGET_PCT of copy bandwidth, and in which torch.compile's figure from the same run is higher,
    compared as printed (0.1 point)."""
    compiled = {(row["dtype"], row["shape"]): row for row in rows if row["impl"] == "compile" and row["op"] == op}
    low, behind, count = [], [], 0
    for row in rows:
        if row["impl"] != op:
            continue
        for direction in ("fwd", "bwd"):
            count += 1
            ours = round(float(row[f"{direction}_pct_copy"]), 1)
            where = f"{row['dtype']} {row['shape']} {direction}"
            if ours < TARGET_PCT:
                low.append(f"{where} {ours:.1f}")
            other = compiled.get((row["dtype"], row["shape"]))
            theirs = round(float(other[f"{direction}_pct_copy"]), 1) if other else None
            if theirs is not None and theirs > ours:
                behind.append(f"{where} {ours:.1f} < {theirs:.1f}")
    return [
        f"{op}: >= {TARGET_PCT:.0f} % of copy bandwidth in {count - len(low)} of {count} figures"
        + (f"; below: {', '.join(low)}" if low else ""),
        f"torch.compile ahead of {op} in {len(behind)} of {count} figures"
        + (f": {', '.join(behind)}" if behind else ""),
    ]


def as_tuple(result) -> tuple:
    return result if isinstance(result, tuple) else (result,)


def scalars(op) -> dict:
    """The scalars the benchmark passes: each one's first example, or its default (as the tests)."""
    return {s.name: (s.examples[0] if s.examples else s.default) for s in op.params}


def make_inputs(op, shape, dtype) -> list[torch.Tensor]:
    """Inputs of the declared domains and shapes (per_row: one value per row); those with a gradient require one."""
    inputs = []
    for t in op.inputs:
        size = op.input_shape(t, torch.Size(shape))
        if t.domain is None:
            x = torch.randn(size, device="cuda", dtype=dtype)
        else:
            x = (torch.rand(size, device="cuda") * (t.domain[1] - t.domain[0]) + t.domain[0]).to(dtype)
        inputs.append(x.requires_grad_(t.grad))
    return inputs


def check(op, dtype: torch.dtype, inputs: list) -> None:
    """Refuse to time a kernel that disagrees with the float64 reference on this input."""
    sample = [x[:64].detach() for x in inputs]
    expected = as_tuple(op.reference(*[x.double() for x in sample], **scalars(op)))
    actual = as_tuple(getattr(package, op.name)(*sample, **scalars(op)))
    for a, e in zip(actual, expected, strict=True):
        torch.testing.assert_close(a, e.to(dtype), **op.tolerances(dtype, "forward"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    names = [op.name for op in package.ALL_OPS]
    parser.add_argument("--op", choices=names, action="append", help="repeatable; default: every op")
    parser.add_argument("--dtype", choices=sorted(DTYPES), action="append", help="repeatable; default: all built")
    parser.add_argument("--shape", action="append", help=f"ROWSxCOLS, repeatable; default: {' '.join(DEFAULT_SHAPES)}")
    parser.add_argument("--replays", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=GPU_ROUNDS, help="rounds per figure (median)")
    parser.add_argument("--csv", type=Path, help="write every figure to this CSV file")
    parser.add_argument("--plot", type=Path, help="draw GB/s against shape to this PNG (needs matplotlib)")
    args = parser.parse_args()
    if args.rounds < 1 or args.replays < 1:
        parser.error("--rounds and --replays must be at least 1")
    if not torch.cuda.is_available():
        raise SystemExit("benchmark.py needs a CUDA GPU")

    # One compiled graph per dtype, shape and grad mode, each for its static shape (dynamic=False),
    # the kernel a model whose shapes do not change gets: compiled once and called at several
    # shapes, a function switches to a slower dynamic-shape kernel after the first. Past the
    # default limit (8) torch.compile would quietly run the eager function and the "compile" rows
    # would time eager PyTorch.
    for name in ("recompile_limit", "cache_size_limit"):
        if hasattr(torch._dynamo.config, name):
            setattr(torch._dynamo.config, name, 10_000)
    copy_gbs = copy_bandwidth(args.replays)
    device = torch.cuda.get_device_name()
    print(f"{device}, torch {torch.__version__}, copy bandwidth {copy_gbs:.0f} GB/s")
    header = f"{'dtype':>9} {'shape':>12} {'impl':>18} {'fwd GB/s':>9} {'fwd %':>6} {'bwd GB/s':>9} {'bwd %':>6}"
    rows = []
    for op in [op for op in package.ALL_OPS if not args.op or op.name in args.op]:
        params = scalars(op)
        function = getattr(package, op.name)

        def ours(*inputs, function=function, params=params):
            return function(*inputs, **params)

        def reference(*inputs, op=op, params=params):
            return op.reference(*inputs, **params)

        implementations = {op.name: ours, "eager": reference, "compile": torch.compile(reference, dynamic=False)}
        for dtype_name in args.dtype or list(DTYPES):
            dtype = DTYPES[dtype_name]
            host = host_us(implementations, make_inputs(op, (1, 256), dtype))
            costs = ", ".join(f"{name} {us:.1f} us" for name, us in host.items())
            print(f"\n{op.name} {dtype_name}: host cost per forward call: {costs}")
            print(header)
            print("-" * len(header))
            for shape_text in args.shape or DEFAULT_SHAPES:
                shape = tuple(int(s) for s in shape_text.split("x"))
                inputs = make_inputs(op, shape, dtype)
                check(op, dtype, inputs)
                with torch.no_grad():
                    grad_outputs = [torch.randn_like(y) for y in as_tuple(function(*inputs, **params))]
                numel, rows_count, size = inputs[0].numel(), inputs[0].numel() // shape[-1], inputs[0].element_size()
                fwd_bytes = op.bytes_moved(numel, rows_count, size, "forward")
                bwd_bytes = op.bytes_moved(numel, rows_count, size, "backward")
                timings = gpu_ms(implementations, inputs, grad_outputs, args.rounds, args.replays)
                for name, (fwd_ms, bwd_ms) in timings.items():
                    fwd_gbs = fwd_bytes / fwd_ms / 1e6
                    bwd_gbs = bwd_bytes / bwd_ms / 1e6
                    fwd_pct, bwd_pct = 100 * fwd_gbs / copy_gbs, 100 * bwd_gbs / copy_gbs
                    row = f"{dtype_name:>9} {shape_text:>12} {name:>18}"
                    print(f"{row} {fwd_gbs:9.0f} {fwd_pct:6.1f} {bwd_gbs:9.0f} {bwd_pct:6.1f}")
                    figures = [fwd_ms * 1e3, fwd_gbs, fwd_pct, bwd_ms * 1e3, bwd_gbs, bwd_pct, host[name], copy_gbs]
                    values = [op.name, dtype_name, shape_text, name, *(round(v, 3) for v in figures)]
                    rows.append(dict(zip(COLUMNS, [*values, device, torch.__version__], strict=True)))
    print()
    for op in package.ALL_OPS:
        if any(row["op"] == op.name for row in rows):
            print("\n".join(summary(rows, op.name)))
    if args.csv:
        write_csv(rows, args.csv)
        print(f"wrote {args.csv}")
    if args.plot:
        plot(rows, args.plot)
        print(f"wrote {args.plot}")


if __name__ == "__main__":
    main()
