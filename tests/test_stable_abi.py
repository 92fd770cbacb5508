"""The torch_abi answer: the LibTorch stable ABI (the default with registration=torch_library, for
both kernel kinds) or libtorch's C++ API (versioned).

Without building a project: which answers render which ABI, and setup.py's TORCH_TARGET_VERSION
against torch's own macro for the floor. With builds (marked `built`, so CI's newest-torch part runs
them): one wheel of the default project installed into both ends of the torch range, each running
the project's CPU suite, and the versioned build's wheel refused by the other end. The builds are
test_build.py's; the audit of the stable build is test_audit.py's.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import bake
import pytest
from test_build import ROWWISE_STABLE, STABLE, VERSIONED

ROOT = Path(__file__).resolve().parents[1]


def setup_constants(project: Path) -> dict:
    """setup.py's module-level constants and torch_target_version, without running setup.py (it builds)."""
    tree = ast.parse((project / "setup.py").read_text())
    keep = [node for node in tree.body
            if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant | ast.Tuple))
            or (isinstance(node, ast.FunctionDef) and node.name == "torch_target_version")]
    namespace: dict = {}
    exec(compile(ast.Module(body=keep, type_ignores=[]), "setup.py", "exec"), namespace)  # noqa: S102
    return namespace


def compiled_text(project: Path) -> str:
    """What the build compiles: csrc/'s .cpp and .cu files and the project's headers they include, followed
    through their includes (setup.py puts csrc/ on the include path). Both kinds' engines are in every
    project, and a header no source includes is not compiled."""
    csrc = project / "csrc"
    todo, seen = [p for p in csrc.rglob("*") if p.suffix in (".cpp", ".cu")], set()
    while todo:
        path = todo.pop()
        if path not in seen:
            seen.add(path)
            todo += [csrc / name for name in re.findall(r'^#include "([^"]+)"', path.read_text(), re.M)]
    return "".join(p.read_text() for p in sorted(seen))


@pytest.mark.parametrize("answers, abi", [
    ({}, "stable"),
    ({"registration": "pybind11"}, "versioned"),
    ({"kernel": "rowwise"}, "stable"),
    ({"kernel": "rowwise", "registration": "pybind11"}, "versioned"),
    ({"torch_abi": "versioned"}, "versioned"),
    ({"kernel": "rowwise", "torch_abi": "versioned"}, "versioned"),
])
def test_default_abi(tmp_path, answers, abi):
    project = bake.render({}, tmp_path, **answers)
    constants = setup_constants(project)
    assert constants["STABLE_ABI"] is (abi == "stable")
    sources = compiled_text(project)
    if abi == "stable":
        # Only the stable headers (torch_api.h's, reached through op.h): no ATen, c10 or torch/library.h
        # include in anything the build compiles.
        assert "#include <torch/csrc/stable/library.h>" in sources
        assert "#include <ATen/" not in sources and "#include <c10/" not in sources
        assert "#include <torch/library.h>" not in sources and "#include <torch/extension.h>" not in sources
    else:
        assert "torch/csrc/stable" not in sources


def test_workflows_test_one_wheel_across_the_range(tmp_path):
    """The stable project's CI installs one wheel at both ends; its release builds one manylinux abi3
    wheel with the newest torch and uploads it only after it passed at both ends. A versioned project
    has no release workflow."""
    import yaml

    project = bake.render({}, tmp_path / "stable")
    workflows = project / ".github" / "workflows"
    ci = yaml.safe_load((workflows / "ci.yml").read_text())
    steps = " ".join(step.get("run", "") for step in ci["jobs"]["one-wheel-every-torch"]["steps"])
    assert '"torch==2.11.*"' in steps and "--upgrade torch" in steps
    assert "/opt/newest/bin/python -m build --wheel" in steps and "for end in oldest newest" in steps
    release = yaml.safe_load((workflows / "release.yml").read_text())
    assert release["jobs"]["test"]["needs"] == "wheel" and release["jobs"]["upload"]["needs"] == "test"
    specs = {entry["spec"] for entry in release["jobs"]["test"]["strategy"]["matrix"]["include"]}
    assert specs == {"torch==2.11.*", "torch"}
    build = " ".join(step.get("run", "") for step in release["jobs"]["wheel"]["steps"])
    assert "pip install --upgrade torch" in build and "--plat manylinux_2_28_x86_64" in build
    versioned = bake.render({}, tmp_path / "versioned", torch_abi="versioned")
    assert not (versioned / ".github" / "workflows" / "release.yml").exists()
    assert "one-wheel-every-torch" not in (versioned / ".github" / "workflows" / "ci.yml").read_text()


def test_target_version_is_torchs_macro_for_the_floor(tmp_path):
    """setup.py computes TORCH_TARGET_VERSION from OLDEST_TORCH; torch's own header says what that
    number must be (TORCH_VERSION_2_11_0 for torch 2.11)."""
    pytest.importorskip("torch")
    from torch.utils.cpp_extension import include_paths

    project = bake.render({}, tmp_path)
    constants = setup_constants(project)
    major, minor = constants["OLDEST_TORCH"]
    value = constants["torch_target_version"]((major, minor))
    source = tmp_path / "version.cpp"
    source.write_text("#include <torch/csrc/stable/version.h>\n"
                      f"static_assert(TORCH_VERSION_{major}_{minor}_0 == {value:#x}ULL, \"TORCH_TARGET_VERSION\");\n")
    compiler = shutil.which("c++") or shutil.which("g++")
    assert compiler, "no C++ compiler"
    flags = [f"-I{path}" for path in include_paths()]
    result = subprocess.run([compiler, "-std=c++17", "-fsyntax-only", *flags, str(source)], capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stderr
    # The flag reaches both compilers, and the requirement is the floor, not a pin.
    text = (project / "setup.py").read_text()
    assert "TORCH_TARGET_VERSION={torch_target_version(OLDEST_TORCH):#x}" in text
    assert "cxx_flags += [*stable" in text and "nvcc_flags += [*stable" in text


# The two ends of the supported torch range, each a Python environment with torch and the projects'
# test requirements: the floor (.venv, which requirements-dev.txt pins at it) and the newest on PyPI
# (.torch-range/newest/venv, made by `bash scripts/test-torch-range.sh newest install`).
ENDS = {
    "floor": Path(os.environ.get("TORCH_FLOOR_PYTHON", ROOT / ".venv" / "bin" / "python")),
    "newest": Path(os.environ.get("TORCH_NEWEST_PYTHON", ROOT / ".torch-range/newest/venv/bin/python")),
}


def torch_version(python: Path) -> str:
    return subprocess.run([str(python), "-c", "import torch; print(torch.__version__)"], capture_output=True,
                          text=True, check=True).stdout.strip()


@pytest.fixture(scope="module")
def ends() -> dict[str, tuple[Path, str]]:
    """{end: (python, torch version)}; skips when an end's environment is missing."""
    missing = [f"{end} ({python})" for end, python in ENDS.items() if not python.exists()]
    if missing:
        pytest.skip(f"no environment for {', '.join(missing)}: bash scripts/test-torch-range.sh newest install, "
                    "or set TORCH_FLOOR_PYTHON / TORCH_NEWEST_PYTHON")
    found = {end: (python, torch_version(python)) for end, python in ENDS.items()}
    assert found["floor"][1] != found["newest"][1], found
    return found


def wheel_of(built_project, options: dict, out: Path) -> Path:
    project, build, log = built_project(options)
    assert build.returncode == 0, log.read_text()[-5000:]
    result = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out)],
                            cwd=project, env=bake.build_env(arch_list="9.0", jobs=2), capture_output=True, text=True)
    assert result.returncode == 0, (result.stdout + result.stderr)[-5000:]
    (wheel,) = out.glob("*.whl")
    return wheel


def install(wheel: Path, python: Path, target: Path) -> str:
    """Installs the wheel's files alone into target (its requirement is the torch of python); returns
    the wheel's sha256, read just before."""
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    result = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                             "--no-index", "--no-deps", "--target", str(target), str(wheel)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    return digest


@pytest.mark.parametrize("stable", [STABLE, ROWWISE_STABLE], ids=bake.combo_id)
def test_one_stable_wheel_serves_the_torch_range(built_project, ends, tmp_path, stable):
    """One wheel of a stable project (the default, and the rowwise kind's), built with the torch this
    suite runs with (the newest in CI's newest-torch part: the release recipe), installed as the same
    file into the floor's and the newest's environment; the project's own CPU suite passes in each.
    The versioned build's wheel does not load into the other end."""
    wheel = wheel_of(built_project, stable, tmp_path / "stable")
    assert wheel.name.endswith("-cp310-abi3-linux_x86_64.whl"), wheel.name
    project, _, _ = built_project(stable)
    table = {}
    for end, (python, version) in ends.items():
        site = tmp_path / f"site-{end}"
        digest = install(wheel, python, site)
        # The project without its package (which would shadow the wheel's): the tests read csrc/ too.
        tree = tmp_path / f"project-{end}"
        shutil.copytree(project, tree, ignore=shutil.ignore_patterns("matrix_op", "build", "*.egg-info"))
        env = {**os.environ, "PYTHONPATH": str(site)}
        run = subprocess.run([str(python), "-m", "pytest", "tests", "-q", "-p", "no:cacheprovider", "-x"],
                             cwd=tree, env=env, capture_output=True, text=True, timeout=1800)
        summary = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else ""
        assert run.returncode == 0, f"torch {version}: {run.stdout[-4000:]}{run.stderr[-2000:]}"
        where = subprocess.run([str(python), "-c", "import matrix_op; print(matrix_op.__file__)"], env=env,
                               cwd=tmp_path, capture_output=True, text=True, check=True).stdout.strip()
        assert Path(where).is_relative_to(site), where
        table[end] = (version, digest, summary)
    assert len({digest for _, digest, _ in table.values()}) == 1, table
    print("\n".join(f"torch {version}  {digest}  {summary}" for version, digest, summary in table.values()))

    # The negative control: the versioned build's wheel, built with this torch, in the other end.
    versioned = wheel_of(built_project, VERSIONED, tmp_path / "versioned")
    import torch

    other = next(python for python, version in ends.values() if version != torch.__version__)
    site = tmp_path / "site-versioned"
    install(versioned, other, site)
    run = subprocess.run([str(other), "-c", "import matrix_op"], cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": str(site)}, capture_output=True, text=True)
    assert run.returncode != 0 and "undefined symbol" in run.stderr, run.stdout + run.stderr


def without_nvcc(tmp_path: Path, **extra: str) -> dict:
    """An environment where no nvcc can be found: none on PATH, CUDA_HOME an empty folder."""
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if "cuda" not in p.lower())
    (tmp_path / "no-cuda").mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "TORCH_CUDA_ARCH_LIST"}
    return {**env, "PATH": path, "CUDA_HOME": str(tmp_path / "no-cuda"), "MAX_JOBS": "2", **extra}


@pytest.mark.parametrize("answers", [{"cpu_impl": "no"}, {"kernel": "rowwise", "cpu_impl": "no"}])
def test_cpu_only_build_refused_without_cpu_kernels(tmp_path, answers):
    project = bake.render({}, tmp_path, **answers)
    result = subprocess.run([sys.executable, "setup.py", "--version"], cwd=project, capture_output=True, text=True,
                            env=without_nvcc(tmp_path, USE_CUDA="0"), timeout=300)
    assert result.returncode != 0
    refusal = "USE_CUDA=0 builds the CPU kernels alone, but this project has none that build without the CUDA ones"
    assert f"{refusal} (it was generated with cpu_impl=no)" in result.stderr, result.stderr[-3000:]


@pytest.mark.built
@pytest.mark.parametrize("kernel, abi", [("elementwise", "stable"), ("elementwise", "versioned"), ("rowwise", "stable")])
def test_cpu_only_build_needs_no_nvcc(tmp_path, kernel, abi):
    """USE_CUDA=0: the CPU kernels built by the host compiler alone; the project's suite runs on the CPU."""
    project = bake.render({}, tmp_path / "project", kernel=kernel, torch_abi=abi, **bake.NAMES)
    env = without_nvcc(tmp_path, USE_CUDA="0")
    build = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=project, env=env,
                           capture_output=True, text=True, timeout=1800)
    assert build.returncode == 0, (build.stdout + build.stderr)[-5000:]
    assert "nvcc" not in build.stdout + build.stderr
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x"], cwd=project, env=env,
                         capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
