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
from concurrent.futures import ThreadPoolExecutor
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


def families_in(text: str) -> list[str]:
    """The kernels a sanitizer report names (the name of each `..._kernel<...>` frame)."""
    return [m.group(1) for m in KERNEL.finditer(text)]


@dataclass
class Run:
    target: str
    tool: str
    errors: int = 0
    warnings: int = 0
    failed_cases: list[str] = field(default_factory=list)
    by_family: Counter = field(default_factory=Counter)  # reports by the kernel they name
    by_case: Counter = field(default_factory=Counter)  # reports by the case that was running
    aborted: list[int] = field(default_factory=list)  # cases whose fault ended a process
    ok: bool = True
    cases: int = 0
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
    # Each report starts with '========= <what>' and names its kernel in the lines below; the case
    # running is the last one started before it (the cases print to the same stream, flushed).
    case = "(before the first case)"
    for block in re.split(r"\n========= (?=\S)", log):
        if re.match(r"(Invalid|Uninitialized|Error|Race|Barrier|Program hit|Warning)", block):
            found = families_in(block)
            unnamed = "(CUDA API errors after a fault)" if block.startswith("Program hit") else "(no kernel named)"
            run.by_family[found[0] if found else unnamed] += 1
            run.by_case[case] += 1
        started = re.findall(r"^CASE \d+ START (.*)$", block, flags=re.M)
        case = started[-1] if started else case
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
            parse(logs[-1], run)
            reached = max(map(int, re.findall(r"^CASE (\d+) START", logs[-1], flags=re.M)), default=start)
            run.ok, run.note = False, f"timed out after {timeout:.0f} s at case {reached} of {run.cases or '?'}"
            break
        log = proc.stdout + proc.stderr
        logs.append(log)
        parse(log, run)
        counts = re.findall(r"^CASES (\d+)$", log, flags=re.M)
        if not counts:
            run.ok, run.note = False, f"the cases did not start (exit status {proc.returncode})"
            break
        total = int(counts[0])
        run.cases = total
        if re.search(r"^\d+ passed, \d+ failed$", log, flags=re.M):
            break  # the cases ran to their end
        # A case lost the CUDA context (sanitize_cases.py stops there): go on after it.
        last = max(map(int, re.findall(r"^CASE (\d+) START", log, flags=re.M)), default=start - 1)
        if last < start:
            run.ok, run.note = False, f"no case ran (exit status {proc.returncode})"
            break
        run.aborted.append(last)
        start = last + 1
    (out / f"{target.replace(' ', '_').replace('/', '-')}-{tool}.log").write_text("\n".join(logs))
    return run


def coverage(cases_args: list[str], env: dict, log: Path) -> dict[str, int] | None:
    """The cases without a sanitizer, values checked: the kernels launched (torch.profiler), by
    name, or None when a case failed (the log says which)."""
    proc = subprocess.run([sys.executable, str(CASES), *cases_args, "--coverage"], env=env,
                          capture_output=True, text=True, check=False)
    log.write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        return None
    counts: Counter = Counter()
    for line in proc.stdout.splitlines():
        if line.startswith("KERNEL "):
            for found in families_in(line + "<"):
                counts[found] += 1
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


def plan_boundaries(out: Path) -> Path:
    """The shapes where reference_ops' planners change their answer on this GPU: plan_boundaries.cpp
    built with the host's C++ compiler and run with the GPU's limits (as csrc/launch.cuh reads them)."""
    import torch

    ops = HERE.parent / "reference_ops"
    binary, found = out / "plan_boundaries", out / "plan_boundaries.txt"
    cxx = os.environ.get("CXX") or shutil.which("g++") or "c++"
    subprocess.run([cxx, "-std=c++17", "-O2", f"-I{ops / 'csrc'}", str(ops / "tests" / "plan_boundaries.cpp"),
                    str(ops / "csrc" / "norm_plan.cpp"), "-o", str(binary)], check=True)
    p = torch.cuda.get_device_properties(0)
    # (torch does not report the shared memory the runtime reserves per CTA: 1 KiB from sm_80 on.)
    limits = [p.multi_processor_count, p.L2_cache_size, 8 if p.major >= 9 else 1, p.shared_memory_per_block_optin,
              p.shared_memory_per_multiprocessor, 1024 if p.major >= 8 else 0]
    with found.open("w") as f:
        subprocess.run([str(binary), *map(str, limits)], stdout=f, check=True)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--project", type=Path, action="append", default=[], help="a built generated project")
    parser.add_argument("--no-reference-ops", action="store_true", help="only the --project targets")
    parser.add_argument("--sweep", action="store_true",
                        help="reference_ops: also the exhaustive sweep (every small shape, every planner boundary)")
    parser.add_argument("--small", action="store_true", help="with --sweep: the small shapes only, no planner boundaries")
    parser.add_argument("--groups", default="", help="comma-separated sweep groups (default: all; --sweep)")
    parser.add_argument("--tools", default=",".join(TOOLS), help=f"comma-separated, of {', '.join(TOOLS)}")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="sanitizer processes at once")
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
    targets = [] if args.no_reference_ops else [("reference_ops", ["reference_ops", "--group", "families"], ops_env)]
    if args.sweep and not args.no_reference_ops:
        listed = subprocess.run([sys.executable, str(CASES), "reference_ops", "--list-groups"], capture_output=True,
                                text=True, check=True).stdout.split()[1:]
        groups = [g for g in args.groups.split(",") if g] or listed
        bad = sorted(set(groups) - set(listed))
        if bad:
            parser.error(f"unknown sweep groups {bad}; choose from {', '.join(listed)}")
        found = [] if args.small else ["--boundaries", str(plan_boundaries(args.out))]
        targets += [(f"sweep {g}", ["reference_ops", "--group", g, *found], ops_env) for g in groups]
    targets += [project_target(p.resolve()) for p in args.project]

    # Without a sanitizer first, values checked against float64 (and the kernels each target
    # launched counted); then every tool over every target, the sanitizer runs skipping the
    # comparisons (the first pass made them). Each (target, tool) is its own process.
    jobs = []
    for name, cases_args, extra in targets:
        # One CPU thread a process (the float64 references are small): --jobs processes share the cores.
        env = {"OMP_NUM_THREADS": "1", **os.environ, **extra}
        jobs.append(("coverage", name, cases_args, env))
        jobs += [(tool, name, cases_args, env) for tool in tools]
    launched: dict[str, dict[str, int]] = {}
    by_target: dict[str, dict[str, Run]] = defaultdict(dict)

    def work(job):
        tool, name, cases_args, env = job
        if tool == "coverage":
            return job, coverage(cases_args, env, args.out / f"{name.replace(' ', '_').replace('/', '-')}-values.log")
        no_check = ["--no-check"] if cases_args[0] == "reference_ops" else []
        return job, run_tool(name, cases_args + no_check, tool, args.out, env, sanitizer, args.timeout)

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for (tool, name, _, _), result in pool.map(work, jobs):
            if tool == "coverage":
                launched[name] = result
                print(f"{name:<40} values         {'ok' if result is not None else 'FAILED'}", flush=True)
                continue
            by_target[name][tool] = result
            print(f"{name:<40} {tool:<15} cases {result.cases:>6}  errors {result.errors:>4}  warnings "
                  f"{result.warnings:>3}  failed cases {len(result.failed_cases)}  faults that ended the process "
                  f"{len(result.aborted)}{'  ' + result.note if result.note else ''}", flush=True)

    print(f"\nErrors per target and tool (-exact: PYTORCH_NO_CUDA_MEMORY_CACHING=1, every tensor its own allocation); "
          f"logs in {args.out}/")
    header = f"| target | cases | kernels launched | values | {' | '.join(tools)} |"
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    bad = False
    kernels: Counter = Counter()
    for name, _, _ in targets:
        runs = by_target[name]
        cells = []
        for t in tools:
            r = runs[t]
            bad |= r.errors > 0 or r.warnings > 0 or bool(r.failed_cases) or bool(r.aborted) or not r.ok
            cell = f"{r.errors}" + (f" (+{r.warnings} warnings)" if r.warnings else "")
            cell += "" if r.ok and not r.failed_cases else f" [{r.note or str(len(r.failed_cases)) + ' cases failed'}]"
            cells.append(cell)
            kernels.update(r.by_family)
        values = launched[name]
        bad |= values is None
        cases = max((r.cases for r in runs.values()), default=0)
        launches = len(values) if values is not None else "-"
        print(f"| {name} | {cases} | {launches} | {'ok' if values is not None else 'FAILED'} | {' | '.join(cells)} |")
    if kernels:
        print("\nReports by kernel (all tools):")
        for kernel, n in kernels.most_common():
            print(f"  {n:>6}  {kernel}")
        print("\nFirst cases with reports, per target and tool:")
        for name, _, _ in targets:
            for t in tools:
                for case, n in list(by_target[name][t].by_case.items())[:8]:
                    print(f"  {name} {t}: {case} ({n})")
    print("\nresult:", "FAILED" if bad else "clean")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
