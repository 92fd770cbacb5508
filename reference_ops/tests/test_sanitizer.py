"""compute-sanitizer (scripts/sanitize.py) over a call of every kernel family and over the sweep:
every M <= 8 and N <= 64 and each shape where a planner changes its answer (with its neighbours),
every op, dtype and parameter dtype, with and without weight and bias, forward and backward, as a
whole buffer and at an offset into one, one process per group. memcheck and initcheck with the
caching allocator and with exact allocations (PYTORCH_NO_CUDA_MEMORY_CACHING=1, every tensor its own
cudaMalloc), racecheck and synccheck report zero errors, and every value matches float64."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

PROJECT = Path(__file__).resolve().parents[1]
SANITIZE = PROJECT.parent / "scripts" / "sanitize.py"
SANITIZER = shutil.which("compute-sanitizer") or (
    "/usr/local/cuda/bin/compute-sanitizer" if os.path.exists("/usr/local/cuda/bin/compute-sanitizer") else None
)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.skipif(SANITIZER is None, reason="needs compute-sanitizer (CUDA Toolkit)")
def test_every_kernel_family_and_the_sweep_are_sanitizer_clean(tmp_path):
    env = dict(
        os.environ,
        PATH=f"{Path(SANITIZER).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        PYTHONPATH=os.pathsep.join(filter(None, [str(PROJECT), os.environ.get("PYTHONPATH")])),
    )
    proc = subprocess.run(
        [sys.executable, str(SANITIZE), "--sweep", "--out", str(tmp_path), "--timeout", "3600"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert "result: clean" in proc.stdout
