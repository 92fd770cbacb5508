"""compute-sanitizer over every kernel family of reference_ops and of generated projects.

Runs scripts/sanitize_cases.py under memcheck (with PyTorch's caching allocator and with exact
allocations, PYTORCH_NO_CUDA_MEMORY_CACHING=1, where a read past a tensor's end is a read past its
allocation), racecheck, synccheck and initcheck, and prints a table of errors per tool and kernel
family. Zero errors everywhere is the bar: the exit status is 1 otherwise. On a GPU machine:

    python scripts/sanitize.py                                  # reference_ops (installed or built in place)
    python scripts/sanitize.py --project path/to/my-cuda-op     # also a generated project (built)
    python scripts/sanitize.py --tools memcheck-exact --out logs
    python scripts/sanitize.py --sweep --small --tools memcheck --chunk 512 --deadline 400 --no-values

--chunk splits each sweep group into parts of that many cases, a process each, so that many
processes share a long group; --deadline (seconds) starts no case after it, lets each run end
normally and counts the cases that ran (a run stopped there is not clean: the table says how many
of its cases ran).

Each run's full sanitizer log goes to --out (default sanitize-logs/).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import time
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
    cases: int = 0  # the cases of the target (or of its part, with --chunk)
    ran: int = 0  # the cases that ran to their end under the tool
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
    run.ran += len(re.findall(r"^CASE \d+ (?:OK|FAILED) ", log, flags=re.M))


def _run(cmd: list[str], env: dict, timeout: float | None) -> tuple[str, bool]:
    """The command's output, and whether it ran out of time. It runs in a process group of its own,
    so that a timeout ends the sanitizer and the program under it together."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        return out + err, False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return (out or "") + (err or ""), True


def run_tool(target: str, cases_args: list[str], tool: str, out: Path, env: dict, sanitizer: str,
             timeout: float | None, start: int = 0, stop: int | None = None) -> Run:
    """One tool over the cases from ``start`` to ``stop`` (default: every case). A kernel fault ends
    the process (its CUDA context is lost): the cases then go on in a new process from the one after
    the case that faulted. ``timeout`` (seconds) bounds the whole run."""
    args, extra_env = TOOLS[tool]
    run = Run(target, tool)
    logs, total, first = [], None, start
    deadline = None if timeout is None else time.monotonic() + timeout
    bounds = [] if stop is None else ["--stop", str(stop)]
    while total is None or start < total:
        cmd = [sanitizer, *args, *COMMON, sys.executable, str(CASES), *cases_args, "--start", str(start), *bounds]
        left = None if deadline is None else max(1.0, deadline - time.monotonic())
        log, timed_out = _run(cmd, {**env, **extra_env}, left)
        logs.append(log)
        parse(log, run)
        counts = re.findall(r"^CASES (\d+)$", log, flags=re.M)
        if counts:
            total = int(counts[0]) if stop is None else min(stop, int(counts[0]))
            run.cases = total - first
        if timed_out:
            reached = max(map(int, re.findall(r"^CASE (\d+) START", log, flags=re.M)), default=start)
            run.ok, run.note = False, f"timed out after {timeout:.0f} s at case {reached} of {run.cases or '?'}"
            break
        if not counts:
            run.ok, run.note = False, "the cases did not start"
            break
        if re.search(r"^DEADLINE before case", log, flags=re.M):
            run.ok, run.note = False, "stopped at the deadline"
            break
        if re.search(r"^\d+ passed, \d+ failed$", log, flags=re.M):
            break  # the cases ran to their end
        # A case lost the CUDA context (sanitize_cases.py stops there): go on after it.
        last = max(map(int, re.findall(r"^CASE (\d+) START", log, flags=re.M)), default=start - 1)
        if last < start:
            run.ok, run.note = False, "no case ran"
            break
        run.aborted.append(last)
        start = last + 1
    (out / f"{target.replace(' ', '_').replace('/', '-').replace(':', '-')}-{tool}.log").write_text("\n".join(logs))
    return run


def coverage(cases_args: list[str], env: dict, log: Path) -> tuple[dict[str, int] | None, int]:
    """The cases without a sanitizer, values checked: the kernels launched (torch.profiler), by
    name, or None when a case failed (the log says which); and how many cases ran."""
    proc = subprocess.run([sys.executable, str(CASES), *cases_args, "--coverage"], env=env,
                          capture_output=True, text=True, check=False)
    log.write_text(proc.stdout + proc.stderr)
    ran = len(re.findall(r"^CASE \d+ (?:OK|FAILED) ", proc.stdout, flags=re.M))
    if proc.returncode != 0:
        return None, ran
    counts: Counter = Counter()
    for line in proc.stdout.splitlines():
        if line.startswith("KERNEL "):
            for found in families_in(line + "<"):
                counts[found] += 1
    return counts, ran


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
    parser.add_argument("--chunk", type=int, default=0,
                        help="with --sweep: each group's cases in parts of this many, one process each")
    parser.add_argument("--deadline", type=float, default=None,
                        help="seconds from now after which no case starts; each run then ends normally, and "
                        "the table counts the cases that ran")
    parser.add_argument("--no-values", action="store_true", help="skip the pass without a sanitizer")
    args = parser.parse_args()
    until = None if args.deadline is None else time.time() + args.deadline
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
        for g in groups:
            if args.chunk <= 0:
                targets.append((f"sweep {g}", ["reference_ops", "--group", g, *found], ops_env))
                continue
            import sanitize_cases

            total = len(sanitize_cases.sweep_cases(g, found[1] if found else None))
            for a in range(0, total, args.chunk):
                b = min(total, a + args.chunk)
                targets.append((f"sweep {g} [{a}:{b}]", ["reference_ops", "--group", g, *found], ops_env, a, b))
    targets += [project_target(p.resolve()) for p in args.project]
    targets = [t if len(t) == 5 else (*t, 0, None) for t in targets]
    # Parts in turn across the groups (every group's first part, then every group's second, ...), so
    # that a deadline leaves each group's first rows run rather than some groups whole.
    targets.sort(key=lambda t: t[3])

    # Without a sanitizer first, values checked against float64 (and the kernels each target
    # launched counted); then every tool over every target, the sanitizer runs skipping the
    # comparisons (the first pass made them). Each (target, tool) is its own process.
    jobs = []
    deadline = ["--until", f"{until:.0f}"] if until is not None else []
    for name, cases_args, extra, start, stop in targets:
        # One CPU thread a process (the float64 references are small): --jobs processes share the cores.
        env = {"OMP_NUM_THREADS": "1", **os.environ, **extra}
        bounds = ["--start", str(start)] + (["--stop", str(stop)] if stop is not None else [])
        if not args.no_values:
            jobs.append(("coverage", name, cases_args + bounds + deadline, env, start, stop))
        jobs += [(tool, name, cases_args + deadline, env, start, stop) for tool in tools]
    launched: dict[str, dict[str, int] | None] = {}
    values_ran: dict[str, int] = {}
    by_target: dict[str, dict[str, Run]] = defaultdict(dict)

    def work(job):
        tool, name, cases_args, env, start, stop = job
        if tool == "coverage":
            log = args.out / f"{name.replace(' ', '_').replace('/', '-').replace(':', '-')}-values.log"
            return job, coverage(cases_args, env, log)
        no_check = ["--no-check"] if cases_args[0] == "reference_ops" else []
        timeout = args.timeout
        if until is not None:  # a backstop: the cases stop starting at the deadline
            timeout = min(timeout or float("inf"), max(1.0, until - time.time() + 120))
        return job, run_tool(name, cases_args + no_check, tool, args.out, env, sanitizer, timeout, start, stop)

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for (tool, name, *_), result in pool.map(work, jobs):
            if tool == "coverage":
                launched[name], values_ran[name] = result
                print(f"{name:<40} values         cases {result[1]:>6}  {'ok' if result[0] is not None else 'FAILED'}",
                      flush=True)
                continue
            by_target[name][tool] = result
            print(f"{name:<40} {tool:<15} cases {result.ran:>6} of {result.cases:>6}  errors {result.errors:>4}  warnings "
                  f"{result.warnings:>3}  failed cases {len(result.failed_cases)}  faults that ended the process "
                  f"{len(result.aborted)}{'  ' + result.note if result.note else ''}", flush=True)

    print(f"\nErrors per target and tool (-exact: PYTORCH_NO_CUDA_MEMORY_CACHING=1, every tensor its own allocation); "
          f"logs in {args.out}/")
    header = f"| target | cases | kernels launched | values | {' | '.join(tools)} |"
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    bad = False
    kernels: Counter = Counter()
    # The parts of a group (--chunk) are added up into the group's row.
    rows: dict[str, list[str]] = {}
    for name, *_ in targets:
        rows.setdefault(name.split(" [")[0], []).append(name)
    for row, names in rows.items():
        cells = []
        for t in tools:
            parts = [by_target[name][t] for name in names]
            ran, cases = sum(r.ran for r in parts), sum(r.cases for r in parts)
            # A run killed at its timeout printed no summary: its reports count.
            errors = sum(r.errors if r.ok else max(r.errors, sum(r.by_family.values())) for r in parts)
            warnings = sum(r.warnings for r in parts)
            failed = sum(len(r.failed_cases) for r in parts)
            notes = sorted({r.note for r in parts if r.note})
            bad |= errors > 0 or warnings > 0 or failed > 0 or any(r.aborted or not r.ok for r in parts)
            cell = f"{errors}" + (f" (+{warnings} warnings)" if warnings else "")
            cell += f" ({ran} of {cases} cases)" if ran != cases else ""
            cell += f" [{failed} cases failed]" if failed else ""
            cell += "" if all(r.ok for r in parts) else f" [{'; '.join(notes[:2])}]"
            cells.append(cell)
            for r in parts:
                kernels.update(r.by_family)
        if args.no_values:
            values, launches = "not run", "-"
        else:
            found = [launched[name] for name in names]
            ok = all(v is not None for v in found)
            bad |= not ok
            values = f"{'ok' if ok else 'FAILED'} ({sum(values_ran[name] for name in names)} cases)"
            launches = len(set().union(*found)) if ok else "-"
        cases = sum(max((r.cases for r in by_target[name].values()), default=0) for name in names)
        print(f"| {row} | {cases} | {launches} | {values} | {' | '.join(cells)} |")
    if kernels:
        print("\nReports by kernel (all tools):")
        for kernel, n in kernels.most_common():
            print(f"  {n:>6}  {kernel}")
        print("\nFirst cases with reports, per target and tool:")
        for name, *_ in targets:
            for t in tools:
                for case, n in list(by_target[name][t].by_case.items())[:8]:
                    print(f"  {name} {t}: {case} ({n})")
    print("\nresult:", "FAILED" if bad else "clean")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
