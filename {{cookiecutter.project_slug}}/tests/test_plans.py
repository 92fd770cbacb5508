"""The engines' planners, on the CPU: each planner is plain C++ (csrc/engine/*_plan.h), so its
test program is built with the host compiler and run here, with no GPU and no torch."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COMPILER = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")


@pytest.mark.skipif(COMPILER is None, reason="needs a C++ compiler (c++ or g++ on PATH, or CXX)")
@pytest.mark.parametrize("test", sorted(p.name for p in Path(__file__).parent.glob("*_plan_test.cpp")))
def test_planner(tmp_path, test):
    binary = tmp_path / "plan_test"
    subprocess.run(
        [
            COMPILER,
            "-std=c++17",
            "-O1",
            "-Wall",
            "-Werror",
            f"-I{ROOT / 'csrc'}",
            str(Path(__file__).parent / test),
            "-o",
            str(binary),
        ],
        check=True,
    )
    result = subprocess.run([str(binary)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]
    assert " 0 failed" in result.stdout
