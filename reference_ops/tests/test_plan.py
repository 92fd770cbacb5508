"""The planners (csrc/norm_plan.cpp) of the forward, the backward and the fused residual ops' two
directions on the CPU: plan_test.cpp, built with the host's C++ compiler, checks that named shapes
map to their variants, that no width falls through to a kernel that is not built and that every
built kernel is planned. Needs no GPU and no build of the extension."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
CSRC = HERE.parent / "csrc"


def compiler() -> str | None:
    return os.environ.get("CXX") or shutil.which("g++") or shutil.which("clang++")


@pytest.mark.skipif(compiler() is None, reason="needs a C++ compiler")
def test_plan(tmp_path):
    binary = tmp_path / "plan_test"
    build = [
        compiler(),
        "-std=c++17",
        "-O2",
        "-Wall",
        "-Werror",
        f"-I{CSRC}",
        str(HERE / "plan_test.cpp"),
        str(CSRC / "norm_plan.cpp"),
        "-o",
        str(binary),
    ]
    subprocess.run(build, check=True)
    result = subprocess.run([str(binary)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.rstrip().endswith("OK (0 failures)"), result.stdout
