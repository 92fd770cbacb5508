"""The compute-sanitizer sweep's cases (scripts/sanitize_cases.py) on the CPU kernels: a sample of
every group's small shapes and the kernel families, each checked against float64, so the cases and
their references stay true where no GPU runs them (the sweep itself runs on a GPU:
tests/test_sanitizer.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

# The repository's scripts/ (reference_ops/ is its child, or a copy further down, as the torch-range
# check makes in .torch-range/).
SCRIPTS = next(
    p / "scripts" for p in Path(__file__).resolve().parents if (p / "scripts" / "sanitize_cases.py").exists()
)
sys.path.insert(0, str(SCRIPTS))
import sanitize_cases  # noqa: E402

# Every 31st case: a stride prime to the cases per width (parameter choices x offsets), so each
# row count, parameter choice and offset still comes up in every group.
STRIDE = 31


@pytest.fixture(autouse=True)
def on_the_cpu(monkeypatch):
    monkeypatch.setattr(sanitize_cases, "DEVICE", "cpu")


@pytest.mark.parametrize("group", sanitize_cases.sweep_groups())
def test_sweep_group_sample_matches_float64(group):
    cases = sanitize_cases.reference_ops_cases(group, None, check_values=True)
    assert len(cases) == 64 * 8 * 2 * len(sanitize_cases.param_choices(group.split(":")[0]))
    for case in cases[::STRIDE]:
        case.run()


def test_sweep_groups_cover_every_op_and_dtype():
    groups = [g.split(":") for g in sanitize_cases.sweep_groups()]
    assert {g[0] for g in groups} == {"layer_norm", "rms_norm", "add_layer_norm", "add_rms_norm"}
    for op in ("layer_norm", "rms_norm"):
        assert {tuple(g[1:]) for g in groups if g[0] == op} == {
            (x, p) for x in ("bfloat16", "float16") for p in (x, "float32")
        } | {("float32", "float32"), ("float64", "float64")}


def test_a_nearly_constant_layer_norm_row_is_spread_before_the_call():
    # 5x2 float32 with a residual: row 2 of x + residual is 0.017 wide, where LayerNorm's gradient
    # in float32 cannot match float64; the case spreads such rows and then matches.
    call = sanitize_cases.NormCall("add_layer_norm", 5, 2, "float32", "float32", True, True)
    sanitize_cases.run_norm_call(call, check_values=True)


@pytest.mark.skipif(not hasattr(torch.ops, "reference_ops"), reason="reference_ops not built")
def test_families_without_the_widest_rows_match_float64():
    for case in sanitize_cases.reference_ops_cases("families", None, check_values=True):
        M, N = (int(v) for v in case.family.split()[1].split("x"))
        if M * N <= 1 << 20:
            case.run()
