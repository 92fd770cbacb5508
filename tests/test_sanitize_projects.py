"""compute-sanitizer over the kernels of generated projects (scripts/sanitize.py --project): the
elementwise and the rowwise kernel, forward and backward, every dtype the template offers, on views
at an offset and rows that end at the end of their allocation. The kernels are the same source in
every option combination (the answers choose the dtypes dispatched and the registration), so these
two builds, with every dtype, cover the kernels of all 64 combinations. GPU machines only."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import bake
import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
SANITIZER = shutil.which("compute-sanitizer") or (
    "/usr/local/cuda/bin/compute-sanitizer" if os.path.exists("/usr/local/cuda/bin/compute-sanitizer") else None
)
ALL_DTYPES = {"float16": True, "bfloat16": True, "float64": True, "cpu_impl": True, "registration": "torch_library"}


@pytest.mark.template_change
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.skipif(SANITIZER is None, reason="needs compute-sanitizer (CUDA Toolkit)")
def test_generated_kernels_are_sanitizer_clean(tmp_path):
    projects = []
    for kernel in ("elementwise", "rowwise"):
        project = bake.render({**ALL_DTYPES, "kernel": kernel}, tmp_path / kernel, **bake.NAMES)
        build = bake.build(project, bake.build_env(jobs=os.cpu_count() or 2), tmp_path / f"{kernel}-build.log")
        assert build.returncode == 0, (tmp_path / f"{kernel}-build.log").read_text()[-5000:]
        projects += ["--project", str(project)]
    env = dict(os.environ, PATH=f"{Path(SANITIZER).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "sanitize.py"), "--no-reference-ops", *projects,
                           "--out", str(tmp_path / "logs"), "--timeout", "300"],
                          env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert "result: clean" in proc.stdout
