"""The supported torch range: one declared floor everywhere, no fixed C++ standard, and a clear
message when nvcc and torch differ in their CUDA major version.

The builds against both ends of the range are `bash scripts/test-torch-range.sh both`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import bake
import pytest

ROOT = Path(__file__).resolve().parents[1]
FLOOR = re.compile(r"^torch>=(\d+\.\d+)$")


def floor_of(requirements: list[str]) -> str:
    found = [FLOOR.match(r) for r in requirements if r.startswith("torch")]
    assert len(found) == 1 and found[0], requirements
    return found[0][1]


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    return bake.render({}, tmp_path_factory.mktemp("range"))


def test_one_torch_floor_everywhere(project):
    ours = tomllib.loads((ROOT / "reference_ops" / "pyproject.toml").read_text())
    floor = floor_of(ours["project"]["dependencies"])
    assert floor_of(ours["build-system"]["requires"]) == floor
    generated = tomllib.loads((project / "pyproject.toml").read_text())
    assert floor_of(generated["build-system"]["requires"]) == floor
    # The package's own requirement is the torch it is built against (setup.py), never below the floor.
    assert generated["project"]["dynamic"] == ["dependencies"]
    oldest = re.search(r"^OLDEST_TORCH = \((\d+), (\d+)\)$", (project / "setup.py").read_text(), re.M)
    assert oldest and f"{oldest[1]}.{oldest[2]}" == floor
    # The generated CI tests the floor and the newest torch.
    workflow = (project / ".github" / "workflows" / "ci.yml").read_text()
    assert f'spec: "torch=={floor}.*"' in workflow and 'spec: "torch"' in workflow
    # The main suite runs on the pinned torch: pinned at the floor, it tests the oldest end, and
    # .ci/run adds the newest (scripts/test-torch-range.sh newest).
    pinned = re.search(r"^torch==(\d+\.\d+)\.\d+$", (ROOT / "requirements-dev.txt").read_text(), re.M)
    assert pinned and pinned[1] == floor, "requirements-dev.txt's torch is not the floor: run the oldest end in CI"


def test_setup_files_leave_the_cxx_standard_to_torch(project):
    for setup in (ROOT / "reference_ops" / "setup.py", project / "setup.py"):
        assert "-std=" not in setup.read_text(), setup


def fake_cuda_home(tmp_path: Path, release: str) -> Path:
    nvcc = tmp_path / f"cuda-{release}" / "bin" / "nvcc"
    nvcc.parent.mkdir(parents=True)
    nvcc.write_text(f"#!/bin/sh\necho 'Cuda compilation tools, release {release}, V{release}.0'\n")
    nvcc.chmod(0o755)
    return nvcc.parent.parent


def setup_py(folder: Path, cuda_home: Path) -> subprocess.CompletedProcess:
    """Runs setup.py up to its checks only: `--version` builds nothing."""
    env = dict(os.environ, CUDA_HOME=str(cuda_home), TORCH_CUDA_ARCH_LIST="9.0")
    return subprocess.run([sys.executable, "setup.py", "--version"], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("which", ["reference_ops", "generated"])
def test_cuda_major_mismatch_names_the_fix(tmp_path, project, which):
    torch = pytest.importorskip("torch")
    if torch.version.cuda is None:
        pytest.skip("a CPU-only torch")
    major = int(torch.version.cuda.split(".")[0])
    folder = ROOT / "reference_ops" if which == "reference_ops" else project
    other = setup_py(folder, fake_cuda_home(tmp_path, f"{major - 1}.8"))
    assert other.returncode != 0
    built = f"but torch {torch.__version__} is built with CUDA {torch.version.cuda}"
    assert f"is CUDA {major - 1}.8, {built}" in other.stderr
    assert f"install the cuda toolkit {major}.x" in other.stderr.lower()
    assert f"a torch built for CUDA {major - 1}" in other.stderr
    # A minor difference passes the check (torch.utils.cpp_extension only warns about it).
    minor = setup_py(folder, fake_cuda_home(tmp_path, f"{major}.9"))
    assert minor.returncode == 0, minor.stderr[-3000:]
