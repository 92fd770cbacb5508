"""The torch_abi answer: the LibTorch stable ABI (the default for the elementwise kind with
registration=torch_library) or libtorch's C++ API (versioned).

Here without building a project: which answers render which ABI, and setup.py's TORCH_TARGET_VERSION
against torch's own macro for the floor. The builds are test_build.py's (the default is stable), the
audit of the stable build test_audit.py's, and one wheel across the torch range test_torch_range.py's.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
from pathlib import Path

import bake
import pytest


def setup_constants(project: Path) -> dict:
    """setup.py's module-level constants and torch_target_version, without running setup.py (it builds)."""
    tree = ast.parse((project / "setup.py").read_text())
    keep = [node for node in tree.body
            if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant | ast.Tuple))
            or (isinstance(node, ast.FunctionDef) and node.name == "torch_target_version")]
    namespace: dict = {}
    exec(compile(ast.Module(body=keep, type_ignores=[]), "setup.py", "exec"), namespace)  # noqa: S102
    return namespace


@pytest.mark.parametrize("answers, abi", [
    ({}, "stable"),
    ({"registration": "pybind11"}, "versioned"),
    ({"kernel": "rowwise"}, "versioned"),
    ({"torch_abi": "versioned"}, "versioned"),
])
def test_default_abi(tmp_path, answers, abi):
    project = bake.render({}, tmp_path, **answers)
    constants = setup_constants(project)
    assert constants["STABLE_ABI"] is (abi == "stable")
    sources = "".join(p.read_text() for p in (project / "csrc").rglob("*") if p.is_file())
    if abi == "stable":
        # Only the stable headers: no ATen, c10 or torch/library.h include anywhere in csrc/.
        assert "#include <torch/csrc/stable/library.h>" in sources
        assert "#include <ATen/" not in sources and "#include <c10/" not in sources
        assert "#include <torch/library.h>" not in sources and "#include <torch/extension.h>" not in sources
    else:
        assert "torch/csrc/stable" not in sources


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
