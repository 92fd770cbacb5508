"""benchmarks/host_cost.py runs and prints a row for every op, API and pass (the compiled API: its
no-grad forward) (on CUDA where a GPU is present, on the CPU otherwise)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import torch

PROJECT = Path(__file__).resolve().parents[1]
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
ROW = re.compile(r"^(layer_norm|rms_norm) +(function|module|compiled) +(no-grad fwd|fwd w/ grad|fwd\+bwd) +"
                 r"([0-9.]+) +([0-9.]+) +([0-9.]+)  (met|missed)$", re.M)  # fmt: skip


def test_host_cost_prints_every_row(tmp_path):
    report = tmp_path / "host.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(PROJECT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(
        [sys.executable, str(PROJECT / "benchmarks" / "host_cost.py"), "--device", DEVICE, "--calls", "20",
         "--repeats", "2", "--json", str(report)],
        capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    printed = {(m[1], m[2], m[3]): m for m in ROW.finditer(proc.stdout)}
    expected = {(op, api, p) for op in ("layer_norm", "rms_norm") for api in ("function", "module")
                for p in ("no-grad fwd", "fwd w/ grad", "fwd+bwd")}  # fmt: skip
    expected |= {(op, "compiled", "no-grad fwd") for op in ("layer_norm", "rms_norm")}
    assert set(printed) == expected, proc.stdout
    rows = json.loads(report.read_text())["rows"]
    assert len(rows) == len(expected)
    for r in rows:
        assert r["torch_us"] > 0 and r["ours_us"] > 0
        m = printed[r["op"], r["api"], r["pass_"]]
        ratio = r["ours_us"] / r["torch_us"]
        assert abs(float(m[6]) - ratio) <= 1e-3 * max(1.0, ratio), (m[0], r)
        assert m[7] == ("met" if ratio <= 1.0 else "missed")


def test_control_times_torch_against_itself(tmp_path):
    """--control: torch's norms timed a second time (twin), a column and a summary line of its own."""
    report = tmp_path / "host.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(PROJECT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(
        [sys.executable, str(PROJECT / "benchmarks" / "host_cost.py"), "--device", DEVICE, "--calls", "10",
         "--repeats", "2", "--control", "--json", str(report)],
        capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = json.loads(report.read_text())["rows"]
    assert len(rows) == 14 and all(r["twin_us"] > 0 for r in rows)
    assert "twin/torch" in proc.stdout
    twin = [r["twin_us"] / r["torch_us"] for r in rows]
    assert f"twin / torch {min(twin):.3f}-{max(twin):.3f}" in proc.stdout
