"""benchmarks/e2e.py in its quick mode (tiny models, few steps): the models with reference_ops' norms
train and decode like the same models with torch.nn's norms. Runs on CUDA where a GPU is present,
on the CPU otherwise."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

PROJECT = Path(__file__).resolve().parents[1]
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
PHASES = ["train", "prefill", "decode b1", "decode b8", "decode b64"]


def run_e2e(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    report = tmp_path / "e2e.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(PROJECT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(
        [sys.executable, str(PROJECT / "benchmarks" / "e2e.py"), "--device", DEVICE, "--quick", "--json", str(report),
         *args],
        capture_output=True, text=True, env=env, timeout=900,
    )  # fmt: skip
    data = json.loads(report.read_text()) if report.exists() else {}
    return proc, data


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    return run_e2e(tmp_path_factory.mktemp("e2e"))


def test_quick_run_agrees_with_torch(quick_run):
    proc, data = quick_run
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert data["checks"], "no agreement checks were reported"
    for check in data["checks"]:
        assert check["ok"] and check["max_diff"] <= check["tol"], check
    assert "DISAGREE" not in proc.stdout


@pytest.mark.parametrize("arch", ["llama", "gpt"])
def test_loss_curves_match_step_by_step(quick_run, arch):
    _, data = quick_run
    curve = data["loss_curves"][f"{arch}-tiny eager"]
    ours, theirs = torch.tensor(curve["ours"]), torch.tensor(curve["torch"])
    assert len(ours) == len(theirs) == 6
    assert torch.isfinite(ours).all()
    rtol = data["loss_rtol"]["bf16" if DEVICE == "cuda" else "fp32"]
    torch.testing.assert_close(ours, theirs, rtol=rtol, atol=0)
    # The models learn something: the same data gives a lower loss after a few steps.
    assert theirs[-1] < theirs[0]


@pytest.mark.parametrize("arch", ["llama", "gpt"])
def test_every_phase_is_timed_and_printed(quick_run, arch):
    proc, data = quick_run
    modes = ["eager", "compile"] if DEVICE == "cuda" else ["eager"]
    for mode in modes:
        rows = [r for r in data["rows"] if r["model"] == f"{arch}-tiny" and r["mode"] == mode]
        assert [r["phase"] for r in rows] == PHASES
        for r in rows:
            assert r["torch_ms"] > 0 and r["ours_ms"] > 0
            assert f"{r['model']:<13} {r['phase']:<11} {mode:<8}" in proc.stdout


def test_a_different_norm_is_caught(tmp_path):
    """ours' norm weights shifted by 0.5: the loss and logits checks fail and the exit status says so."""
    proc, data = run_e2e(tmp_path, "--archs", "llama", "--perturb", "0.5", "--compile", "off", "--decode-batches", "1")
    assert proc.returncode == 1, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "DISAGREE" in proc.stdout
    assert not any(c["ok"] for c in data["checks"])


def test_control_times_torch_against_itself(tmp_path):
    """--control: a second torch-norm model (the twin) is timed beside the others; it trains as
    torch's does, its ratio is printed per row and its spread per mode."""
    proc, data = run_e2e(tmp_path, "--archs", "llama", "--control", "--compile", "off", "--decode-batches", "1")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert [r["phase"] for r in data["rows"]] == ["train", "prefill", "decode b1"]
    assert all(r["twin_ms"] > 0 for r in data["rows"])
    curve = data["loss_curves"]["llama-tiny eager"]
    # The same model, weights and data: on the CPU the same losses to the bit (ours' differ in
    # rounding); on CUDA within the bound of ours (atomics in backward kernels may add in any order).
    rtol = data["loss_rtol"]["bf16"] if DEVICE == "cuda" else 0.0
    torch.testing.assert_close(torch.tensor(curve["twin"]), torch.tensor(curve["torch"]), rtol=rtol, atol=0)
    assert "twin/torch" in proc.stdout
    assert "eager: twin / torch " in proc.stdout


@pytest.mark.skipif(DEVICE != "cuda", reason="CUDA graphs: needs a CUDA GPU")
def test_steps_in_cuda_graphs_agree_and_are_timed(tmp_path):
    proc, data = run_e2e(tmp_path, "--archs", "llama", "--compile-mode", "reduce-overhead", "--decode-batches", "1")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    graphed = [r for r in data["rows"] if r["mode"] == "graphed"]
    assert [r["phase"] for r in graphed] == ["train", "prefill", "decode b1"]
    assert all(r[f"{impl}_ms"] > 0 for r in graphed for impl in ("torch", "ours", "fused"))
    assert all(c["ok"] for c in data["checks"]), data["checks"]
    # Every step ran in CUDA graphs (the KV cache at a static address may be updated inside them).
    assert data["cudagraph_skips"] == 0


def test_cuda_graphs_on_the_cpu_are_refused(tmp_path):
    proc, _ = run_e2e(tmp_path, "--device", "cpu", "--compile-mode", "reduce-overhead")
    assert proc.returncode == 2
    assert "--compile-mode reduce-overhead runs CUDA graphs: it needs --device cuda" in proc.stderr
