#!/usr/bin/env python
"""Forward kernel time of several builds of reference_ops, side by side, read with Nsight Compute.

A/B tool for kernel changes whose effect is a few per cent (the bench's rounds move 2-4 points;
ncu's kernel time of the same kernel moves about 1 %). Each build is a reference_ops project
folder with its extension built in place (`python setup.py build_ext --inplace`). For every case
the inference op runs `--launches` times on fresh random data under ncu (clocks left as found);
the table gives, per build, the median kernel time, warp instructions executed and the share of
issue slots busy, and the time against the first build.

Usage (on a GPU machine with ncu):
  python benchmarks/kernel_ab.py --builds base=/tmp/base,new=. \\
      --cases layer_norm:fp16:2048x32768,rms_norm:bf16:131072x512 [--launches 7] [--out DIR]
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import shutil
import statistics
import subprocess
import sys

DTYPES = ("bf16", "fp16", "fp32")
METRICS = {
    "gpu__time_duration.sum": "us",
    "smsp__inst_executed.sum": "Minst",
    "sm__inst_issued.avg.pct_of_peak_sustained_active": "issue%",
}
KERNEL_REGEX = "regex:norm_fwd_(rows|uncached)_kernel"


def parse_case(text: str) -> tuple[str, str, int, int]:
    op, dtype, shape = text.split(":")
    if op not in ("layer_norm", "rms_norm") or dtype not in DTYPES:
        raise argparse.ArgumentTypeError(f"case {text!r}: want layer_norm|rms_norm:bf16|fp16|fp32:MxN")
    m, n = (int(v) for v in shape.split("x"))
    return op, dtype, m, n


def run_cases(root: str, cases: list[tuple[str, str, int, int]], launches: int) -> None:
    """Child process (under ncu): launch each case's forward `launches` times, in order."""
    sys.path.insert(0, root)
    import torch

    import reference_ops

    dtypes = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
    with torch.no_grad():
        for op, dname, m, n in cases:
            dtype = dtypes[dname]
            x = torch.randn(m, n, device="cuda", dtype=dtype)
            w = torch.randn(n, device="cuda", dtype=dtype)
            b = torch.randn(n, device="cuda", dtype=dtype)
            for _ in range(launches):
                if op == "layer_norm":
                    reference_ops.layer_norm(x, (n,), w, b)
                else:
                    reference_ops.rms_norm(x, (n,), w)
            torch.cuda.synchronize()
            del x, w, b


def profile(root: str, args, cases) -> list[dict[str, float]]:
    """One dict of metric -> value per profiled kernel, in launch order."""
    cmd = [
        args.ncu,
        "--clock-control",
        "none",
        "--csv",
        "--kernel-name",
        KERNEL_REGEX,
        "--metrics",
        ",".join(METRICS),
        sys.executable,
        os.path.abspath(__file__),
        "--child",
        root,
        "--launches",
        str(args.launches),
        "--cases",
        ",".join(f"{op}:{d}:{m}x{n}" for op, d, m, n in cases),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"ncu failed for {root}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    text = proc.stdout[proc.stdout.find('"ID"') :]
    kernels: dict[int, dict[str, float]] = {}
    for row in csv.DictReader(io.StringIO(text)):
        value = float(row["Metric Value"].replace(",", ""))
        unit = row["Metric Unit"]
        if row["Metric Name"] == "gpu__time_duration.sum":
            value *= {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}[unit]
        elif row["Metric Name"] == "smsp__inst_executed.sum":
            value *= 1e-6
        kernels.setdefault(int(row["ID"]), {})[row["Metric Name"]] = value
    return [kernels[k] for k in sorted(kernels)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--builds", help="name=folder,... (reference_ops project folders, built in place)")
    parser.add_argument("--cases", required=True, help="op:dtype:MxN,...")
    parser.add_argument("--launches", type=int, default=7)
    parser.add_argument("--ncu", default=shutil.which("ncu") or "ncu")
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    cases = [parse_case(c) for c in args.cases.split(",")]
    if args.child:
        run_cases(args.child, cases, args.launches)
        return
    if not args.builds:
        parser.error("--builds is required")
    builds = [b.split("=", 1) for b in args.builds.split(",")]
    results = {}
    for name, root in builds:
        kernels = profile(os.path.abspath(root), args, cases)
        if len(kernels) != len(cases) * args.launches:
            sys.exit(f"{name}: {len(kernels)} kernels profiled, expected {len(cases) * args.launches}")
        results[name] = [
            {
                metric: statistics.median(k[metric] for k in kernels[i * args.launches : (i + 1) * args.launches])
                for metric in METRICS
            }
            for i in range(len(cases))
        ]
    header = f"{'case':<30}" + "".join(f" | {name:>26}" for name, _ in builds)
    lines = [header, "-" * len(header)]
    base = builds[0][0]
    for i, (op, d, m, n) in enumerate(cases):
        cells = []
        for name, _ in builds:
            r = results[name][i]
            rel = 100 * (r["gpu__time_duration.sum"] / results[base][i]["gpu__time_duration.sum"] - 1)
            cells.append(
                f"{r['gpu__time_duration.sum']:8.2f} us {rel:+5.1f}% "
                f"{r['smsp__inst_executed.sum']:5.1f}M {r['sm__inst_issued.avg.pct_of_peak_sustained_active']:3.0f}%"
            )
        lines.append(f"{f'{op} {d} {m}x{n}':<30}" + "".join(f" | {c:>26}" for c in cells))
    table = "\n".join(lines)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "kernel_ab.txt"), "w") as f:
        f.write(table + "\n")
    print(table)


if __name__ == "__main__":
    main()
