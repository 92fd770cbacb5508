"""A generated project ships: its wheel installs into a fresh virtual environment and imports there,
and its sdist carries the sources a build needs.

One combination of each registration style, and the rowwise kind on the stable ABI, built once per
session (conftest.built_project: the same builds test_build.py tests, so the wheel costs a link, not a
compilation). The wheel is made
as the README says, `python -m build --wheel --no-isolation`: abi3 (cp310) for torch_library,
CPython-specific for pybind11.

The fresh environment has no pip packages of its own and never downloads: it sees the torch this
suite runs with through a .pth file naming this interpreter's site-packages (the wheel must run
against the torch it was built with), and pip installs the wheel with --no-index, so the wheel's
declared requirements must be met by that torch. The import runs from an empty folder, so the
package comes from the installed wheel and not from the source tree.
"""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import bake
import pytest
import torch
from test_build import BUILT, ROWWISE_STABLE

STYLES = {bake.combo_id(options): options for options in (*BUILT[:2], ROWWISE_STABLE)}


@pytest.fixture(scope="module", params=sorted(STYLES))
def dist(request, built_project, tmp_path_factory) -> tuple[dict, Path, Path, Path]:
    """(options, project, wheel, sdist) for one combination of STYLES."""
    options = STYLES[request.param]
    project, build, log = built_project(options)
    assert build.returncode == 0, log.read_text()[-5000:]
    out = tmp_path_factory.mktemp(f"dist-{request.param}")
    env = bake.build_env(arch_list="9.0", jobs=2)
    for kind in ("--wheel", "--sdist"):
        result = subprocess.run([sys.executable, "-m", "build", kind, "--no-isolation", "--outdir", str(out)],
                                cwd=project, env=env, capture_output=True, text=True)
        assert result.returncode == 0, (result.stdout + result.stderr)[-5000:]
    (wheel,) = out.glob("*.whl")
    (sdist,) = out.glob("*.tar.gz")
    return options, project, wheel, sdist


def test_wheel_tag_matches_the_registration(dist):
    options, _, wheel, _ = dist
    if options["registration"] == "torch_library":
        assert wheel.name.endswith("-cp310-abi3-linux_x86_64.whl"), wheel.name
    else:
        tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
        assert wheel.name.endswith(f"-{tag}-{tag}-linux_x86_64.whl"), wheel.name


def test_wheel_holds_the_built_package_only(dist):
    options, _, wheel, _ = dist
    names = set(zipfile.ZipFile(wheel).namelist())
    so = [n for n in names if n.startswith("matrix_op/_C") and n.endswith(".so")]
    assert len(so) == 1, sorted(names)
    if options["registration"] == "torch_library":
        assert so[0] == "matrix_op/_C.abi3.so"
    assert {"matrix_op/__init__.py", "matrix_op/ops/__init__.py", "matrix_op/py.typed"} <= names
    assert not [n for n in names if n.startswith(("csrc/", "tests/", "benchmarks/"))], sorted(names)
    metadata = zipfile.ZipFile(wheel).read("matrix_op-0.1.0.dist-info/METADATA").decode()
    if options.get("torch_abi") == "stable":
        # On the stable ABI the wheel serves every torch from the floor on.
        assert "Requires-Dist: torch>=2.11" in metadata.splitlines(), metadata
        return
    # The wheel names the torch release it was compiled against: its C++ ABI holds within one release.
    release = ".".join(torch.__version__.split("+")[0].split(".")[:2])
    assert f"Requires-Dist: torch=={release}.*" in metadata.splitlines(), metadata


CHECK = """
import importlib.metadata, json, sys, torch
import matrix_op
{reference}
x = torch.randn(5, 37, dtype=torch.float64)
torch.testing.assert_close(matrix_op.{op}(x, 0.5), reference(x, 0.5))
print(json.dumps({{"file": matrix_op.__file__, "version": matrix_op.__version__, "torch": torch.__version__,
                   "requires": importlib.metadata.requires("matrix-op")}}))
"""


def test_wheel_installs_into_a_fresh_venv_and_imports(dist, tmp_path):
    options, _, wheel, _ = dist
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "_suite_torch.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    install = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-index",
                              "--no-cache-dir", "--disable-pip-version-check", str(wheel)],
                             capture_output=True, text=True)
    assert install.returncode == 0, install.stdout + install.stderr
    empty = tmp_path / "elsewhere"
    empty.mkdir()
    op = "scaled_gelu" if options["kernel"] == "elementwise" else "scaled_softmax"
    reference = f"from matrix_op.ops.{op} import reference"  # the op's declaration, either kind
    run = subprocess.run([python, "-c", CHECK.format(op=op, reference=reference)], cwd=empty, capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    found = json.loads(run.stdout.splitlines()[-1])
    assert Path(found["file"]).is_relative_to(site), found
    assert found["version"] == "0.1.0"
    assert found["torch"] == torch.__version__
    assert any(r.startswith("torch") for r in found["requires"]), found


def test_sdist_carries_the_sources(dist):
    _, project, _, sdist = dist
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    sources = {str(p.relative_to(project)) for p in (project / "csrc").rglob("*") if p.is_file()}
    assert len(sources) >= 5
    assert sources <= names, sorted(sources - names)
    tests = {str(p.relative_to(project)) for p in (project / "tests").glob("*.py")}
    assert tests <= names, sorted(tests - names)
    seeds = {str(p.relative_to(project)) for p in (project / "op-seeds").glob("*")}
    assert seeds and seeds <= names, sorted(seeds - names)  # what new_op.py --kind copies
    top = {"pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "LICENSE", "doctor.py", "new_op.py",
           "benchmarks/benchmark.py"}
    assert top <= names, sorted(top - names)
    assert not [n for n in names if n.endswith((".so", ".o", ".pyc"))], sorted(names)
