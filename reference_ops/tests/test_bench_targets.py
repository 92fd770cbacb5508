"""benchmarks/bench_add_norm.py marks ours' bandwidth figures against the fused ops' target (>= 90 % of copy)
and against torch.compile's figures of the same run (target_lines; on the CPU, from rows as bench_case makes
them)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_add_norm  # noqa: E402


def row(impl, fwd, bwd, M=8192, N=8192, latency=False, op="add_layer_norm", pair="bf16"):
    return dict(op=op, pair=pair, M=M, N=N, impl=impl, fwd_pct_copy=fwd, bwd_pct_copy=bwd, latency_case=latency)


def test_a_figure_below_the_target_is_named_as_missed():
    lines = bench_add_norm.target_lines([row("ours", 97.5, 88.1), row("eager", 60.0, 40.0)])
    assert lines == ["target >= 90 % of copy: 1 of 2 figures met; missed: add_layer_norm bf16 8192x8192 bwd 88.1"]


def test_every_figure_at_the_target_is_met():
    lines = bench_add_norm.target_lines([row("ours", 90.0, 99.0), row("ours", 95.0, 91.0, N=512, pair="fp32")])
    assert lines == ["target >= 90 % of copy: 4 of 4 figures met"]


def test_torch_compile_ahead_is_named_with_both_figures():
    rows = [row("ours", 95.3, 88.1), row("compile", 96.2, 51.0), row("ours", 99.0, 99.7, N=4096)]
    rows.append(row("compile", 97.0, 61.9, N=4096))
    lines = bench_add_norm.target_lines(rows)
    assert lines[1] == "torch.compile ahead in 1 of 4 figures: add_layer_norm bf16 8192x8192 fwd 95.3 < 96.2"


def test_latency_rows_and_missing_impls_are_left_out():
    rows = [row("ours", 10.0, 10.0, M=8, latency=True), row("compile", 99.0, 99.0, M=8, latency=True)]
    assert bench_add_norm.target_lines(rows) == []
    lines = bench_add_norm.target_lines(rows + [row("ours", 92.0, 93.0)])
    assert lines == ["target >= 90 % of copy: 2 of 2 figures met"]
