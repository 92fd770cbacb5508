"""benchmarks/ddp_train.py --compare: models with reference_ops' norms train the same in one process
and in two DistributedDataParallel processes splitting the same global batch. On the CPU with gloo
(a tiny model, a few steps); on two GPUs with NCCL (skipped with fewer)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

PROJECT = Path(__file__).resolve().parents[1]
SCRIPT = PROJECT / "benchmarks" / "ddp_train.py"
DIFF = re.compile(r"^([\w/]+): max diff (.+?) +([0-9.e+-]+)  tolerance ([0-9.e+-]+)  (ok|EXCEEDED)$", re.M)
ARCHS = ("llama", "gpt")
IMPLS = ("ours", "fused")
RUNS = tuple(f"{arch}/{impl}" for arch in ARCHS for impl in IMPLS)
STEPS = 8


def run(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(PROJECT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env,
                          timeout=timeout)  # fmt: skip


def check_comparison(proc: subprocess.CompletedProcess, results: Path) -> None:
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    diffs = DIFF.findall(proc.stdout)
    assert {(arch, what.strip()) for arch, what, *_ in diffs} == {
        (run, what) for run in RUNS
        for what in ("norm grads (first step)", "loss (rel, any step)", "norm params (final)")
    }, proc.stdout  # fmt: skip
    for key, what, value, tol, verdict in diffs:
        assert float(value) <= float(tol) and verdict == "ok", f"{key} {what}: {value} > {tol}"
    one = json.loads((results / "one.json").read_text())
    many = json.loads((results / "many.json").read_text())
    assert (one["world"], many["world"]) == (1, 2)
    for key in RUNS:
        a, b = one["results"][key], many["results"][key]
        assert len(a["losses"]) == len(b["losses"]) == STEPS
        torch.testing.assert_close(torch.tensor(b["losses"]), torch.tensor(a["losses"]), rtol=1e-4, atol=0)
        for grads in ("norm_first_grads", "norm_grads"):
            assert a[grads].keys() == b[grads].keys() and a[grads], f"no {grads} recorded"
        # The norms' weights moved away from their initial ones: the norms were trained.
        assert any(abs(v - 1.0) > 1e-4 for name, p in a["norm_params"].items() if name.endswith("weight") for v in p)


def test_two_cpu_processes_match_one(tmp_path):
    proc = run("--compare", "--device", "cpu", "--size", "tiny", "--steps", str(STEPS), "--results-dir", str(tmp_path))
    check_comparison(proc, tmp_path)


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA GPUs")
def test_two_gpus_match_one(tmp_path):
    proc = run("--compare", "--device", "cuda", "--size", "small", "--steps", str(STEPS), "--results-dir",
               str(tmp_path))  # fmt: skip
    check_comparison(proc, tmp_path)


def test_a_difference_fails_the_check(tmp_path):
    """The comparison itself: a result whose losses or norm gradients differ makes it exit 1."""
    one = tmp_path / "one.json"
    proc = run(
        "--device", "cpu", "--size", "tiny", "--archs", "llama", "--impls", "ours", "--steps", "3", "--out", str(one)
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    data = json.loads(one.read_text())
    for key in ("losses", "norm_first_grads"):
        tampered = json.loads(one.read_text())
        tampered["world"] = 2
        result = tampered["results"]["llama/ours"]
        if key == "losses":
            result["losses"][-1] *= 1.001
        else:
            name = next(iter(result["norm_first_grads"]))
            result["norm_first_grads"][name][0] += 0.01 * max(map(abs, result["norm_first_grads"][name]))
        path = tmp_path / f"{key}.json"
        path.write_text(json.dumps(tampered))
        check = run("--check", str(one), str(path))
        assert check.returncode == 1, check.stdout
        assert "EXCEEDED" in check.stdout
    same = tmp_path / "same.json"
    same.write_text(json.dumps(dict(data, world=2)))
    assert run("--check", str(one), str(same)).returncode == 0
