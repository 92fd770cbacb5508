"""The generated doctor.py reports the toolchain and names the fix for each problem it finds.

Each problem is made real here: an nvcc of another CUDA major version (a stand-in nvcc that
prints a 12.x release), no ninja on PATH, an extension that does not load against this torch (a
library with an undefined symbol, what a build against another torch leaves behind), an arch list
without the GPU (needs a GPU). The architecture arithmetic is checked on its own; the audits
(`doctor.py archs`, `doctor.py abi`) are tests/test_audit.py's.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import bake
import pytest
import torch
from test_build import BUILT
from torch.utils.cpp_extension import CUDA_HOME


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    return bake.render({}, tmp_path_factory.mktemp("doctor"))


def doctor(project: Path, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k != "TORCH_CUDA_ARCH_LIST"}
    return subprocess.run([sys.executable, "doctor.py"], cwd=project, capture_output=True, text=True,
                          env={**environ, **env})


def fails(result: subprocess.CompletedProcess) -> list[str]:
    """Each FAIL line with the fix line below it."""
    lines = result.stdout.splitlines()
    return [f"{line}\n{lines[i + 1]}" for i, line in enumerate(lines) if line.startswith("FAIL")]


def test_reports_the_toolchain(project):
    result = doctor(project)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert f"ok    torch {torch.__version__}, built with CUDA {torch.version.cuda}" in out
    assert "ok    nvcc 13." in out and "ok    ninja " in out
    if torch.cuda.is_available():
        assert "ok    GPU " in out and "compute capability" in out
    else:
        assert "warn  no CUDA GPU visible" in out
        default = load(project).default_arch_list()
        assert default and f"ok    a build here targets {default} (setup.py's default without a GPU)" in out
    assert "warn  my_cuda_op/_C*.so is not built here yet" in out
    assert "no problems found" in out


def test_nvcc_of_another_cuda_major(project, tmp_path):
    fake = tmp_path / "cuda-12" / "bin" / "nvcc"
    fake.parent.mkdir(parents=True)
    fake.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 12.4, V12.4.131'\n")
    fake.chmod(0o755)
    result = doctor(project, CUDA_HOME=str(fake.parents[1]))
    assert result.returncode == 1
    (problem,) = fails(result)
    assert f"nvcc 12.4 ({fake}) but torch is built with CUDA {torch.version.cuda}" in problem
    assert f"install the CUDA Toolkit {torch.version.cuda.split('.')[0]}.x and set CUDA_HOME" in problem
    assert "or install a torch built for CUDA 12" in problem


def test_no_ninja(project, tmp_path):
    result = doctor(project, PATH=str(tmp_path), CUDA_HOME=CUDA_HOME or "/usr/local/cuda")
    assert result.returncode == 1
    (problem,) = fails(result)
    assert "ninja is not on PATH" in problem and "pip install ninja" in problem


def test_extension_built_against_another_torch(project, tmp_path):
    """What an isolated build or a torch upgrade leaves: a library whose torch symbols are gone."""
    source = tmp_path / "stale.c"
    source.write_text("extern void _ZN2at15symbol_of_another_torchEv(void);\n"
                      "void PyInit__C(void) { _ZN2at15symbol_of_another_torchEv(); }\n")
    library = project / "my_cuda_op" / "_C.abi3.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    try:
        result = doctor(project)
    finally:
        library.unlink()
    assert result.returncode == 1
    (problem,) = fails(result)
    assert "my_cuda_op/_C.abi3.so does not load against torch" in problem
    assert "undefined symbol: _ZN2at15symbol_of_another_torchEv" in problem
    assert "build isolation" in problem
    assert "-> rebuild against this torch, without build isolation: pip install --no-build-isolation -e ." in problem


def test_built_extension_loads(built_project):
    project, build, log = built_project(BUILT[0])
    assert build.returncode == 0, log.read_text()[-5000:]
    result = doctor(project, TORCH_CUDA_ARCH_LIST="9.0")
    assert "ok    matrix_op/_C.abi3.so loads" in result.stdout, result.stdout + result.stderr
    # What the library holds, read from it (the fixture builds sm_90 without PTX), not the shell's list.
    assert "ok    matrix_op/_C.abi3.so holds SASS sm_90\n" in result.stdout, result.stdout
    assert result.returncode == 0, result.stdout
    other = doctor(project, TORCH_CUDA_ARCH_LIST="8.0;12.0+PTX")
    assert "ok    matrix_op/_C.abi3.so holds SASS sm_90\n" in other.stdout, other.stdout


def test_built_extension_without_cuobjdump(built_project, monkeypatch, capsys):
    project, build, log = built_project(BUILT[0])
    assert build.returncode == 0, log.read_text()[-5000:]
    module = load(project)
    monkeypatch.setattr(module, "find_cuobjdump", lambda: None)
    report = module.Report()
    module.check_extension(report, torch, None)
    out = capsys.readouterr().out
    assert "ok    matrix_op/_C.abi3.so loads" in out
    assert "warn  the architectures inside matrix_op/_C.abi3.so are not known: cuobjdump not found" in out
    assert "-> pip install nvidia-cuda-cuobjdump" in out
    assert not report.failed


@pytest.mark.skipif(not torch.cuda.is_available(), reason="compares the arch list with a GPU")
def test_arch_list_without_this_gpu(project):
    result = doctor(project, TORCH_CUDA_ARCH_LIST="5.0")
    (problem,) = fails(result)
    major, minor = torch.cuda.get_device_capability()
    assert f"TORCH_CUDA_ARCH_LIST=5.0 does not include this GPU ({major}.{minor})" in problem
    assert "no kernel image is available" in problem
    assert f'export TORCH_CUDA_ARCH_LIST="{major}.{minor}"' in problem


def load(project: Path):
    spec = importlib.util.spec_from_file_location("doctor", project / "doctor.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_arch_arithmetic(project):
    module = load(project)
    covered = module.arch_covered
    assert covered((9, 0), "9.0") and covered((9, 0), "8.0;9.0+PTX") and covered((9, 0), "8.0 9.0a")
    assert covered((10, 0), "8.0;9.0+PTX")  # PTX for an older arch runs on newer GPUs
    assert covered((9, 0), "8.0+PTX")
    # Machine code for X.y runs on X.z, z >= y (Ada's 8.9 runs 8.6, B300's 10.3 runs 10.0), not across majors.
    assert covered((8, 6), "8.0") and covered((8, 9), "8.6") and covered((10, 3), "10.0") and covered((10, 3), "10.0f")
    assert not covered((9, 0), "8.0") and not covered((8, 0), "9.0+PTX") and not covered((8, 0), "8.6")
    assert not covered((12, 0), "10.0") and not covered((11, 0), "12.0+PTX")
    # Arch-specific code (9.0a, 10.0a) and its PTX run on that architecture only.
    assert not covered((10, 3), "10.0a") and not covered((10, 0), "9.0a+PTX") and covered((10, 0), "10.0a")
    assert not covered((9, 0), "Hopper")  # names are not read: reported, never silently accepted
    assert module.arch_list_of(["sm_80", "sm_90a", "sm_100", "compute_120"]) == "8.0;9.0a;10.0;12.0+PTX"
    # What cuobjdump's names become in a list, and back: SASS and PTX told apart.
    assert module.arch_targets("8.0;9.0a+PTX Hopper") == (
        [("8.0", "sm_80", None), ("9.0a+PTX", "sm_90a", "compute_90a")], ["Hopper"])
