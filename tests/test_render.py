"""Every option combination renders with no template syntax, empty file or empty folder left over.

Which files a combination gets is what the template's file names say (cookiecutter skips a name
that renders empty); tests/golden holds the default's, and the hook tests check the pruning."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import bake
import pytest

COMBOS = [bake.combo_id(c) for c in bake.combinations()]
# What an unrendered Jinja tag leaves behind.
LEFTOVERS = ("{{", "{%", "{#", "cookiecutter.")
# GitHub Actions expressions (`${{ matrix.spec }}`) are the workflow's own syntax, kept by {% raw %}.
GITHUB_EXPRESSION = re.compile(r"\$\{\{ [\w.]+ \}\}")


def files_of(project: Path) -> set[str]:
    return {str(p.relative_to(project)) for p in project.rglob("*") if p.is_file()}


def test_matrix_has_every_combination():
    # 2**6 with torch_abi=versioned, and the torch_library ones of both kinds again with torch_abi=stable.
    assert len(COMBOS) == len(set(COMBOS)) == 2**6 + 2**5
    stable = [c for c in bake.combinations() if c["torch_abi"] == "stable"]
    assert {c["registration"] for c in stable} == {bake.STABLE_WITH}
    assert {c["kernel"] for c in stable} == set(bake.MATRIX["kernel"])


@pytest.mark.parametrize("name", COMBOS)
def test_combination_has_no_template_leftovers(rendered_matrix, name):
    _, project = rendered_matrix[name]
    for path in project.rglob("*"):
        relative = str(path.relative_to(project))
        assert not any(token in relative for token in LEFTOVERS), relative
        if path.is_file():
            text = path.read_text()
            if relative.startswith(".github/"):
                text = GITHUB_EXPRESSION.sub("", text)
            for token in LEFTOVERS:
                assert token not in text, f"{relative} contains {token!r}"
            assert text or path.name == "py.typed", f"{relative} is empty"
        else:
            assert any(path.iterdir()), f"{relative}/ is empty"


@pytest.mark.parametrize("name", COMBOS)
def test_combination_python_compiles(rendered_matrix, name):
    _, project = rendered_matrix[name]
    for path in project.rglob("*.py"):
        compile(path.read_text(), str(path), "exec")
    tomllib.loads((project / "pyproject.toml").read_text())


@pytest.mark.parametrize("name", COMBOS)
def test_dtype_answers_reach_the_dispatch_and_the_tests(rendered_matrix, name):
    options, project = rendered_matrix[name]
    chosen = {"float16": options["float16"], "bfloat16": options["bfloat16"], "float64": options["float64"]}
    prefix = "ScalarType::" if options["torch_abi"] == "stable" else "at::k"
    cpp = {"float16": prefix + "Half", "bfloat16": prefix + "BFloat16", "float64": prefix + "Double"}
    cuda_source = "".join(p.read_text() for p in (project / "csrc").rglob("*") if p.is_file())
    support = (project / "tests" / "support.py").read_text()
    tested = next(line for line in support.splitlines() if line.startswith("DTYPES = "))
    for dtype, wanted in chosen.items():
        assert (cpp[dtype] in cuda_source) == wanted, dtype
        assert (f"torch.{dtype}," in tested or f"torch.{dtype}]" in tested) == wanted, dtype


@pytest.mark.parametrize("license_name, first_words", [
    ("MIT", "MIT License"), ("BSD-3-Clause", "BSD 3-Clause License"), ("Apache-2.0", "Apache License"),
])
def test_license_choice(tmp_path, license_name, first_words):
    project = bake.render({}, tmp_path, license=license_name, author="Ada Lovelace")
    text = (project / "LICENSE").read_text()
    assert text.strip().startswith(first_words)
    assert "Ada Lovelace" in text
    assert tomllib.loads((project / "pyproject.toml").read_text())["project"]["license"] == {"text": license_name}


def test_free_text_with_quotes_and_backslashes_stays_valid(tmp_path):
    author = "Dana O'Brien \"DB\" \\ Jr."
    description = 'A "fast" op; it\'s 2x \\ faster'
    project = bake.render({}, tmp_path, author=author, description=description, project_name="Dana's Op")
    metadata = tomllib.loads((project / "pyproject.toml").read_text())["project"]
    assert metadata["authors"][0]["name"] == author
    assert metadata["description"] == description
    assert metadata["name"] == "dana-s-op"
    for path in project.rglob("*.py"):
        compile(path.read_text(), str(path), "exec")


def test_default_answers(tmp_path):
    project = bake.render({}, tmp_path)
    assert project.name == "my-cuda-op"
    assert 'name="scaled_gelu"' in (project / "my_cuda_op" / "ops" / "scaled_gelu.py").read_text()
    assert 'NAMESPACE = "cuop_my_cuda_op"' in (project / "my_cuda_op" / "_registration.py").read_text()
    assert '"scaled_gelu", kCuda' in (project / "csrc" / "ops" / "scaled_gelu.cu").read_text()


@pytest.mark.parametrize("gpus,unexpected", [(0, 1), (1, 1), (2, 3)])
def test_only_the_two_gpu_skips_are_allowed_with_fewer_gpus(monkeypatch, gpus, unexpected):
    import torch

    monkeypatch.setattr(torch.cuda, "device_count", lambda: gpus)
    reasons = [bake.TWO_GPU_SKIP, "needs a CUDA GPU", bake.TWO_GPU_SKIP]
    assert bake.TestCounts(skipped=3, skip_reasons=reasons).unexpected_skips() == unexpected


def test_two_gpu_tests_skip_with_the_reason_bake_allows():
    tests = bake.TEMPLATE / "{{cookiecutter.project_slug}}" / "tests"
    for name in ("test_multi_gpu.py", "test_ddp.py"):
        files = list(tests.glob(f"*{name}*"))
        assert files, name
        for path in files:
            assert f'reason="{bake.TWO_GPU_SKIP}"' in path.read_text(), path.name


@pytest.mark.parametrize("name", ["elementwise-torch_library-f16-bf16-f64-cpu", "rowwise-pybind11"])
def test_importing_an_unbuilt_project_says_to_build_it(rendered_matrix, name):
    # Without its extension (never built, or built for another Python) Python's own message blames a
    # circular import; the package names the build command instead.
    _, project = rendered_matrix[name]
    result = subprocess.run([sys.executable, "-c", "import matrix_op"], cwd=project, capture_output=True, text=True)
    assert result.returncode != 0
    assert "matrix_op._C, the compiled extension, did not load" in result.stderr, result.stderr[-3000:]
    assert "pip install --no-build-isolation -e ." in result.stderr
