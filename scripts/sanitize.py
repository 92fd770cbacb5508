"""compute-sanitizer over every kernel family of reference_ops and of generated projects.

Runs scripts/sanitize_cases.py under memcheck (with PyTorch's caching allocator and with exact
allocations, PYTORCH_NO_CUDA_MEMORY_CACHING=1, where a read past a tensor's end is a read past its
allocation), racecheck, synccheck and initcheck, and prints a table of errors per tool and kernel
family. Zero errors everywhere is the bar: the exit status is 1 otherwise. On a GPU machine:

    python scripts/sanitize.py                                  # reference_ops (installed or built in place)
    python scripts/sanitize.py --project path/to/my-cuda-op     # also a generated project (built)
    python scripts/sanitize.py --tools memcheck-exact --out logs

Each run's full sanitizer log goes to --out (default sanitize-logs/).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASES = HERE / "sanitize_cases.py"

# tool name -> (compute-sanitizer arguments, environment)
TOOLS = {
    "memcheck": (["--tool", "memcheck"], {}),
    "memcheck-exact": (["--tool", "memcheck"], {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}),
    "racecheck": (["--tool", "racecheck", "--racecheck-report", "all"], {}),
    "synccheck": (["--tool", "synccheck"], {}),
    "initcheck": (["--tool", "initcheck"], {}),
    "initcheck-exact": (["--tool", "initcheck"], {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}),
}
COMMON = ["--print-limit", "200", "--error-exitcode", "0", "--target-processes", "all"]

KERNEL = re.compile(r"\b(\w+_kernel)\s*<")
SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) error")
RACE_SUMMARY = re.compile(r"RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) errors?, (\d+) warnings?\)")


def template_args(text: str, start: int) -> list[str]:
    """The top-level template arguments of the '<...>' that starts at text[start]."""
    depth, args, current = 0, [], ""
    for ch in text[start:]:
        if ch == "<":
            depth += 1
            if depth == 1:
                continue
        elif ch == ">":
            depth -= 1
            if depth == 0:
                args.append(current.strip())
                return args
        elif ch == "," and depth == 1:
            args.append(current.strip())
            current = ""
            continue
        current += ch
    return args


def truth(arg: str) -> bool:
    return arg.split(")")[-1].strip() in ("true", "1")


# reference_ops' forward variants in the order of FwdVariant (csrc/norm_plan.h), by family.
FWD_VARIANTS = [
    ("kRows", "bounded rows"), ("kRowsSpan", "span rows"), ("kRowsFull", "unbounded rows"),
    ("kGroup8", "fixed-group rows"), ("kGroup16", "fixed-group rows"), ("kGroup32", "fixed-group rows"),
    ("kFewRows", "few-row (early parameters) rows"), ("kFewRowsFull", "few-row (early parameters) rows"),
    ("kCluster", "cluster bounded rows"), ("kClusterSpan", "cluster span rows"),
    ("kClusterFull", "cluster unbounded rows"),
]


def enum_value(arg: str, names: list[str]) -> int | None:
    """An enum template argument as its index: `(ns::Enum)3`, `ns::Enum::kName` or `kName`."""
    value = arg.split(")")[-1].strip()
    if value.isdigit():
        return int(value)
    name = value.split("::")[-1]
    return names.index(name) if name in names else None


def family(kernel: str, args: list[str]) -> str:
    """The kernel family a reference_ops kernel (or a generated project's) belongs to."""
    if kernel == "norm_fwd_rows_kernel" and len(args) == 5:  # <T, W, variant, norm, packs>
        index = enum_value(args[2], [name for name, _ in FWD_VARIANTS])
        if index is not None and index < len(FWD_VARIANTS):
            return f"forward {FWD_VARIANTS[index][1]}"
    if kernel == "norm_bwd_staged_kernel" and len(args) == 5 and "RowLayout" in args[3] + args[4]:
        return "backward staged" + (" span rows" if enum_value(args[3], ["kAligned", "kSpan"]) == 1 else "")
    if kernel == "norm_fwd_rows_kernel" and len(args) >= 9:
        cluster, span, full, group = truth(args[5]), truth(args[6]), truth(args[7]), args[8].split(")")[-1]
        early = len(args) > 9 and truth(args[9])
        kind = ("cluster " if cluster else "") + (
            "span rows" if span else "fixed-group rows" if group.strip() not in ("0", "")
            else "few-row (early parameters) rows" if early else "unbounded rows" if full else "bounded rows")
        return f"forward {kind}"
    if kernel == "norm_bwd_staged_kernel" and len(args) >= 4:
        return "backward staged" + (" span rows" if truth(args[3]) else "")
    if kernel == "rowwise_bwd_kernel" and len(args) == 4 and truth(args[3]):
        return f"{kernel} (a row split over a cluster)"
    names = {
        "norm_fwd_uncached_kernel": "forward uncached (unaligned / widest rows)",
        "span_param_table_kernel": "forward span parameter tables",
        "norm_bwd_few_rows_kernel": "backward few rows",
        "norm_bwd_kernel": "backward unstaged (unaligned)",
        "norm_bwd_row_stats_kernel": "backward wide rows (row statistics)",
        "norm_bwd_columns_kernel": "backward wide rows (column strips)",
        "column_sum_kernel": "partial-row sums (norm and fused residual backward)",
        "add_norm_fwd_kernel": "fused residual forward",
        "add_norm_bwd_kernel": "fused residual backward",
    }
    return names.get(kernel, kernel)


def families_in(text: str) -> list[str]:
    return [family(m.group(1), template_args(text, m.end() - 1)) for m in KERNEL.finditer(text)]


@dataclass
class Run:
    target: str
    tool: str
    errors: int = 0
    warnings: int = 0
    failed_cases: list[str] = field(default_factory=list)
    by_family: Counter = field(default_factory=Counter)
    aborted: list[int] = field(default_factory=list)  # cases whose fault ended a process
    ok: bool = True
    note: str = ""


def parse(log: str, run: Run) -> None:
    """Adds one sanitizer process's summary and reports to ``run``."""
    totals = SUMMARY.findall(log)
    races = RACE_SUMMARY.findall(log)
    if races:
        run.errors += sum(int(e) for e, _ in races)
        run.warnings += sum(int(w) for _, w in races)
    elif totals:
        run.errors += sum(int(n) for n in totals)
    else:
        run.ok, run.note = False, "no sanitizer summary"
    # Each report starts with '========= <what>' and names its kernel in the lines below.
    for block in re.split(r"\n========= (?=\S)", log):
        if re.match(r"(Invalid|Uninitialized|Error|Race|Barrier|Program hit|Warning)", block):
            found = families_in(block)
            unnamed = "(CUDA API errors after a fault)" if block.startswith("Program hit") else "(no kernel named)"
            run.by_family[found[0] if found else unnamed] += 1
    run.failed_cases += re.findall(r"^CASE \d+ FAILED (.*)$", log, flags=re.M)


def run_tool(target: str, cases_args: list[str], tool: str, out: Path, env: dict, sanitizer: str,
             timeout: float | None) -> Run:
    """One tool over every case. A kernel fault ends the process (its CUDA context is lost): the
    cases then go on in a new process from the one after the case that faulted."""
    args, extra_env = TOOLS[tool]
    run = Run(target, tool)
    logs, start, total = [], 0, None
    while total is None or start < total:
        cmd = [sanitizer, *args, *COMMON, sys.executable, str(CASES), *cases_args, "--start", str(start)]
        try:
            proc = subprocess.run(cmd, env={**env, **extra_env}, capture_output=True, text=True, check=False,
                                  timeout=timeout)
        except subprocess.TimeoutExpired as expired:
            text = [t.decode(errors="replace") if isinstance(t, bytes) else t or "" for t in (expired.stdout, expired.stderr)]
            logs.append("".join(text))
            run.ok, run.note = False, f"timed out after {timeout:.0f} s"
            break
        log = proc.stdout + proc.stderr
        logs.append(log)
        parse(log, run)
        counts = re.findall(r"^CASES (\d+)$", log, flags=re.M)
        if not counts:
            run.ok, run.note = False, f"the cases did not start (exit status {proc.returncode})"
            break
        total = int(counts[0])
        started = [int(i) for i in re.findall(r"^CASE (\d+) START", log, flags=re.M)]
        finished = {int(i) for i in re.findall(r"^CASE (\d+) (?:OK|FAILED)", log, flags=re.M)}
        last = max(started, default=start - 1)
        if last in finished or last < start:
            break
        run.aborted.append(last)
        start = last + 1
    (out / f"{target.replace('/', '-')}-{tool}.log").write_text("\n".join(logs))
    return run


def coverage(cases_args: list[str], env: dict) -> dict[str, int]:
    """Kernel launches per family when the cases run without a sanitizer (torch.profiler)."""
    proc = subprocess.run([sys.executable, str(CASES), *cases_args, "--coverage"], env=env,
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        print(proc.stdout[-4000:], proc.stderr[-4000:], sep="\n")
        raise SystemExit(f"ERROR: the cases failed without a sanitizer ({' '.join(cases_args)})")
    counts: Counter = Counter()
    for line in proc.stdout.splitlines():
        if line.startswith("KERNEL "):
            found = families_in(line)
            if found:
                counts[found[0]] += 1
    return counts


def project_target(project: Path) -> tuple[str, list[str], dict]:
    """The package and op of a rendered, built project, read from its tests/support.py."""
    support = (project / "tests" / "support.py").read_text()
    found = re.search(r"^op = (\w+)\.(\w+)$", support, flags=re.M)
    if found is None:
        raise SystemExit(f"ERROR: {project}: no `op = package.op_name` line in tests/support.py; is it a generated project?")
    package, op = found.groups()
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(project), os.environ.get("PYTHONPATH")]))}
    return f"{project.parent.name}/{project.name}", ["project", "--package", package, "--op", op], env


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--project", type=Path, action="append", default=[], help="a built generated project")
    parser.add_argument("--no-reference-ops", action="store_true", help="only the --project targets")
    parser.add_argument("--tools", default=",".join(TOOLS), help=f"comma-separated, of {', '.join(TOOLS)}")
    parser.add_argument("--out", type=Path, default=Path("sanitize-logs"))
    parser.add_argument("--timeout", type=float, default=None, help="seconds allowed to each sanitizer run")
    args = parser.parse_args()
    sanitizer = shutil.which("compute-sanitizer") or next(
        (p for p in ("/usr/local/cuda/bin/compute-sanitizer",) if os.path.exists(p)), None)
    if sanitizer is None:
        print("ERROR: compute-sanitizer not found: install the CUDA Toolkit and put its bin/ on PATH", file=sys.stderr)
        return 2
    tools = [t for t in args.tools.split(",") if t]
    unknown = [t for t in tools if t not in TOOLS]
    if unknown:
        parser.error(f"unknown tools {unknown}; choose from {', '.join(TOOLS)}")
    args.out.mkdir(parents=True, exist_ok=True)

    # reference_ops installed, or built in place (its folder on PYTHONPATH finds it there).
    ops_env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(HERE.parent / "reference_ops"), os.environ.get("PYTHONPATH")]))}
    targets = [] if args.no_reference_ops else [("reference_ops", ["reference_ops"], ops_env)]
    targets += [project_target(p.resolve()) for p in args.project]
    runs: list[Run] = []
    launched: dict[str, dict[str, int]] = {}
    for name, cases_args, extra in targets:
        env = {**os.environ, **extra}
        launched[name] = coverage(cases_args, env)
        for tool in tools:
            run = run_tool(name, cases_args, tool, args.out, env, sanitizer, args.timeout)
            runs.append(run)
            print(f"{name:<24} {tool:<15} errors {run.errors:>4}  warnings {run.warnings:>3}  "
                  f"failed cases {len(run.failed_cases)}  faults that ended the process {len(run.aborted)}"
                  f"{'  ' + run.note if run.note else ''}", flush=True)

    # The table: one row per kernel family, one column per tool.
    print(f"\nErrors per kernel family and tool (-exact: PYTORCH_NO_CUDA_MEMORY_CACHING=1, every tensor its own allocation); "
          f"logs in {args.out}/")
    header = f"| target | kernel family | launches | {' | '.join(tools)} |"
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    by_target = defaultdict(dict)
    for run in runs:
        by_target[run.target][run.tool] = run
    bad = False
    for name, _, _ in targets:
        fams = sorted(set(launched[name]) | {f for r in by_target[name].values() for f in r.by_family})
        for fam in fams:
            cells = [str(by_target[name][t].by_family.get(fam, 0)) for t in tools]
            print(f"| {name} | {fam} | {launched[name].get(fam, 0)} | {' | '.join(cells)} |")
        totals = []
        for t in tools:
            r = by_target[name][t]
            bad |= r.errors > 0 or r.warnings > 0 or bool(r.failed_cases) or bool(r.aborted) or not r.ok
            cell = f"{r.errors}" + (f" (+{r.warnings} warnings)" if r.warnings else "")
            cell += "" if r.ok and not r.failed_cases else f" [{r.note or str(len(r.failed_cases)) + ' cases failed'}]"
            totals.append(cell)
        print(f"| {name} | **total (sanitizer summary)** | {sum(launched[name].values())} | {' | '.join(totals)} |")
    print("\nresult:", "FAILED" if bad else "clean")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
