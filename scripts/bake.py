"""Render, build and test projects from the template: every option combination, or some.

    python scripts/bake.py list                               # the option matrix
    python scripts/bake.py matrix --out .matrix --jobs 8      # render + build + full tests, all
    python scripts/bake.py matrix --only elementwise-torch_library-f16-bf16-f64-cpu

`matrix` renders each combination with cookiecutter, builds its CUDA extension in place
(torch.utils.cpp_extension, ninja, nvcc), runs the project's own pytest suite and prints a
pass/fail table. On a GPU machine pass --require-gpu: a combination then fails if any of its tests
was skipped (but for the tests that need two GPUs, on a machine with one), so a missing GPU can
never pass as success. The generator's tests import this module for the same render and build
steps.
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

TEMPLATE = Path(__file__).resolve().parents[1]

# The answers that change what is generated; the rest only change names and text.
MATRIX = {
    "kernel": ["elementwise", "rowwise"],
    "registration": ["torch_library", "pybind11"],
    "torch_abi": ["stable", "versioned"],
    "float16": [True, False],
    "bfloat16": [True, False],
    "float64": [True, False],
    "cpu_impl": [True, False],
}
# The registration that torch_abi=stable builds with (either kernel kind).
STABLE_WITH = "torch_library"
# Fixed names for every combination, so identical sources are byte-identical across combinations.
NAMES = {"project_name": "Matrix Op", "project_slug": "matrix-op", "package_name": "matrix_op"}


def combinations() -> list[dict]:
    """Every combination the pre-gen hook accepts: torch_abi=stable only with registration=torch_library
    (pybind11 is always versioned)."""
    every = [dict(zip(MATRIX, values)) for values in itertools.product(*MATRIX.values())]
    return [c for c in every if c["torch_abi"] == "versioned" or c["registration"] == STABLE_WITH]


def combo_id(options: dict) -> str:
    flags = [("f16", "float16"), ("bf16", "bfloat16"), ("f64", "float64"), ("cpu", "cpu_impl")]
    abi = ["stable"] if options.get("torch_abi") == "stable" else []
    return "-".join([options["kernel"], options["registration"], *abi] + [tag for tag, key in flags if options[key]])


def render(options: dict, output_dir: Path, **answers) -> Path:
    """Render one project with cookiecutter's API, as `cookiecutter --no-input` would."""
    from cookiecutter.main import cookiecutter

    return Path(cookiecutter(str(TEMPLATE), no_input=True, output_dir=str(output_dir),
                             extra_context={**options, **answers}))


def torch_cxx_standard() -> str:
    """The -std flag torch.utils.cpp_extension gives the extensions it builds: c++20 from torch 2.12
    (current torch headers need it), c++17 before. For compile commands written by hand; the
    setup.py files pass none and let torch choose."""
    import torch

    major, minor = (int(n) for n in torch.__version__.split(".")[:2])
    return "-std=c++20" if (major, minor) >= (2, 12) else "-std=c++17"


def build_env(arch_list: str | None = None, jobs: int = 2) -> dict:
    env = dict(os.environ, MAX_JOBS=str(jobs))
    if arch_list:
        env["TORCH_CUDA_ARCH_LIST"] = arch_list
    return env


def build(project: Path, env: dict, log: Path) -> subprocess.CompletedProcess:
    """Build the project's extension in place, as the generated README's install does."""
    with log.open("w") as out:
        return subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=project, env=env,
                              stdout=out, stderr=subprocess.STDOUT, check=False)


# The skip reason of the generated tests that need two GPUs: the only skips a machine with one GPU may show.
TWO_GPU_SKIP = "needs two CUDA GPUs"


@dataclass
class TestCounts:
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    failures: list[str] = field(default_factory=list)
    skip_reasons: list[str] = field(default_factory=list)

    def unexpected_skips(self) -> int:
        """Skips a GPU machine must not show: every skip, but the two-GPU tests' where fewer GPUs are visible."""
        import torch

        allowed = TWO_GPU_SKIP if torch.cuda.device_count() < 2 else None
        return sum(1 for reason in self.skip_reasons if allowed is None or allowed not in reason)


def run_tests(project: Path, log: Path, env: dict | None = None) -> TestCounts:
    """Run the project's own pytest suite and count its outcomes from the JUnit report."""
    report = log.with_suffix(".xml")
    with log.open("w") as out:
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}"],
                       cwd=project, env=env, stdout=out, stderr=subprocess.STDOUT, check=False)
    counts = TestCounts()
    if not report.exists():
        counts.failed, counts.failures = 1, ["pytest wrote no report: see the log"]
        return counts
    for case in ET.parse(report).iter("testcase"):
        outcome = {child.tag for child in case}
        if outcome & {"failure", "error"}:
            counts.failed += 1
            counts.failures.append(f"{case.get('classname')}::{case.get('name')}")
        elif "skipped" in outcome:
            counts.skipped += 1
            counts.skip_reasons.append(case.find("skipped").get("message", ""))
        else:
            counts.passed += 1
    return counts


@dataclass
class Result:
    combo: str
    built: bool
    build_s: float
    tests: TestCounts | None
    status: str


def render_fresh(options: dict, out: Path) -> Path:
    root = out / combo_id(options)
    shutil.rmtree(root, ignore_errors=True)
    return render(options, root, **NAMES)


def build_and_test(options: dict, project: Path, out: Path, env: dict, require_gpu: bool) -> Result:
    name = combo_id(options)
    start = time.monotonic()
    built = build(project, env, out / "logs" / f"{name}.build.log").returncode == 0
    build_s = time.monotonic() - start
    if not built:
        return Result(name, False, build_s, None, "BUILD FAILED")
    tests = run_tests(project, out / "logs" / f"{name}.test.log", env)
    ok = tests.failed == 0 and tests.passed > 0 and not (require_gpu and tests.unexpected_skips())
    return Result(name, True, build_s, tests, "ok" if ok else "FAILED")


HEADER = f"{'combination':<48} {'build s':>8} {'passed':>7} {'failed':>7} {'skipped':>8}  status"


def row(r: Result) -> str:
    t = r.tests or TestCounts()
    return f"{r.combo:<48} {r.build_s:8.0f} {t.passed:7d} {t.failed:7d} {t.skipped:8d}  {r.status}"


def print_table(results: list[Result]) -> None:
    print(f"\n{HEADER}")
    for r in results:
        print(row(r))
    good = sum(r.status == "ok" for r in results)
    print(f"\n{good}/{len(results)} combinations built and passed their full test suite")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="print the combination names")
    matrix = sub.add_parser("matrix", help="render, build and test combinations")
    matrix.add_argument("--out", type=Path, default=TEMPLATE / ".matrix", help="work folder (default: %(default)s)")
    matrix.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) // 2),
                        help="combinations built and tested at once (default: %(default)s)")
    matrix.add_argument("--build-jobs", type=int, default=2, help="compile jobs per build (MAX_JOBS)")
    matrix.add_argument("--arch", default=None, help="TORCH_CUDA_ARCH_LIST (default: the local GPU)")
    matrix.add_argument("--only", action="append", help="combination name (repeatable; default: all)")
    matrix.add_argument("--shard", default="0/1", help="K/N: run every N-th combination starting at K")
    matrix.add_argument("--require-gpu", action="store_true",
                        help="fail unless a GPU runs every test (the two-GPU tests where two are visible)")
    args = parser.parse_args(argv)

    combos = combinations()
    if args.command == "list":
        print("\n".join(combo_id(c) for c in combos))
        return 0
    if args.only:
        unknown = set(args.only) - {combo_id(c) for c in combos}
        if unknown:
            parser.error(f"unknown combination(s): {', '.join(sorted(unknown))}; see `bake.py list`")
        combos = [c for c in combos if combo_id(c) in args.only]
    shard, shards = (int(n) for n in args.shard.split("/"))
    combos = combos[shard::shards]
    if args.require_gpu:
        import torch

        if not torch.cuda.is_available():
            print("ERROR: --require-gpu: no CUDA GPU is visible", file=sys.stderr)
            return 2
    (args.out / "logs").mkdir(parents=True, exist_ok=True)
    env = build_env(args.arch, args.build_jobs)
    # Test suites running side by side share the cores: without a limit each one's CPU ops take
    # every core, and torch.compile starts a pool of compile workers per suite.
    threads = str(max(1, (os.cpu_count() or 1) // args.jobs))
    env.setdefault("OMP_NUM_THREADS", threads)
    env.setdefault("TORCHINDUCTOR_COMPILE_THREADS", threads)
    # cookiecutter changes the working directory while it renders, so render one at a time.
    projects = [render_fresh(c, args.out) for c in combos]
    # Each row is printed as its combination finishes, so a run stopped early still reports those.
    print(f"\n{HEADER}", flush=True)
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(build_and_test, c, p, args.out, env, args.require_gpu) for c, p in zip(combos, projects)]
        for future in as_completed(futures):
            print(row(future.result()), flush=True)
    results = [future.result() for future in futures]
    print_table(results)
    for r in results:
        for failure in (r.tests.failures if r.tests else [])[:5]:
            print(f"  {r.combo}: {failure}")
    return 0 if all(r.status == "ok" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
