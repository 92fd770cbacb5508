"""The hooks: every bad answer is refused by name before anything is written; the post hook tidies."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COOKIECUTTER = [sys.executable, "-m", "cookiecutter"]


def load_hook(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "hooks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


pre_gen = load_hook("pre_gen_project")
post_gen = load_hook("post_gen_project")
DEFAULTS = {key: value for key, value in json.loads((ROOT / "cookiecutter.json").read_text()).items()
            if not key.startswith("_")}
GOOD = {**{k: v[0] if isinstance(v, list) else v for k, v in DEFAULTS.items()},
        "project_slug": "my-cuda-op", "package_name": "my_cuda_op", "op_name": "scaled_gelu",
        "description": "A custom elementwise CUDA operator for PyTorch."}

# Bad identifiers and what the message must say about each.
BAD_NAMES = [
    ("1op", "starts with a digit"),
    ("my-op", "hyphens"),
    ("class", "keyword"),
    ("import", "keyword"),
    ("torch", "shadow"),
    ("", "empty"),
    ("my op", "spaces"),
    ("my'op", "quotes"),
    ('my"op', "quotes"),
    ("my\\op", "backslash"),
    ("{{7*7}}", "template"),
    ("$(touch x)", "shell"),
    ("op;rm", "not lower_snake_case"),
    ("std", "keyword|shadow"),
    ("Op", "not lower_snake_case"),
    ("my__op", "double underscore"),
]


def run_cookiecutter(tmp_path: Path, *answers: str) -> subprocess.CompletedProcess:
    out = tmp_path / "out"
    out.mkdir()
    return subprocess.run([*COOKIECUTTER, "--no-input", str(ROOT), "-o", str(out), *answers],
                          cwd=tmp_path, capture_output=True, text=True, check=False)


def test_defaults_are_valid():
    assert pre_gen.validate(GOOD) == []


@pytest.mark.parametrize("key", ["op_name", "package_name"])
@pytest.mark.parametrize("value, reason", BAD_NAMES, ids=[repr(v) for v, _ in BAD_NAMES])
def test_bad_identifier_is_refused_with_its_key(key, value, reason):
    errors = pre_gen.validate({**GOOD, key: value})
    assert len(errors) == 1, errors
    assert errors[0].startswith(f"ERROR: {key}: ")
    assert __import__("re").search(reason, errors[0]), errors[0]


@pytest.mark.parametrize("key", ["op_name", "package_name"])
@pytest.mark.parametrize("value", [v for v, _ in BAD_NAMES], ids=[repr(v) for v, _ in BAD_NAMES])
def test_cookiecutter_refuses_bad_identifier_and_writes_nothing(tmp_path, key, value):
    result = run_cookiecutter(tmp_path, f"{key}={value}")
    assert result.returncode != 0
    assert f"ERROR: {key}: " in result.stderr, result.stderr
    assert "Traceback" not in result.stderr.split("ERROR:")[0], "the hook itself crashed"
    assert list((tmp_path / "out").iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"], "a shell command in an answer ran"


@pytest.mark.parametrize("answers, key", [
    ({"project_slug": "my cuda op"}, "project_slug"),
    ({"project_slug": "my'op"}, "project_slug"),
    ({"project_slug": "a/b"}, "project_slug"),
    ({"project_slug": ".."}, "project_slug"),
    ({"project_name": ""}, "project_name"),
    ({"project_name": "{{ cookiecutter.x }}"}, "project_name"),
    ({"email": "not an email"}, "email"),
    ({"version": "one"}, "version"),
    ({"float16": "maybe"}, "float16"),
    ({"cpu_impl": "2"}, "cpu_impl"),
    ({"kernel": "scan"}, "kernel"),
    ({"op_name": "ops"}, "op_name"),
    ({"op_name": "reference"}, "op_name"),
    ({"op_name": "print"}, "op_name"),
    ({"package_name": "os"}, "package_name"),
    ({"author": "$(whoami)"}, "author"),
])
def test_other_bad_answers_are_refused(answers, key):
    errors = pre_gen.validate({**GOOD, **answers})
    assert [e.split(":")[1].strip() for e in errors] == [key], errors


@pytest.mark.parametrize("answers", [
    ["project_slug=my cuda op"], ["project_slug=my'op"], ["float16=maybe"], ["email=nobody"],
    ["op_name=ops"], ["project_name=$(touch x)"],
    # Names the generated project already uses (tests/test_name_collisions.py tries them all).
    ["op_name=x"], ["op_name=gradcheck"], ["package_name=support"], ["package_name=norm"],
    ["package_name=arg", "registration=pybind11"],
])
def test_cookiecutter_refuses_other_bad_answers_and_writes_nothing(tmp_path, answers):
    result = run_cookiecutter(tmp_path, *answers)
    assert result.returncode != 0
    key = answers[0].split("=")[0]
    assert f"ERROR: {key}: " in result.stderr, result.stderr
    assert list((tmp_path / "out").iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


@pytest.mark.parametrize("value, accepted", [("yes", True), ("no", True), ("True", True), ("off", True), ("sure", False)])
def test_boolean_spellings(value, accepted):
    errors = pre_gen.validate({**GOOD, "float64": value})
    assert (errors == []) == accepted, errors


def test_boolean_no_from_the_command_line_prunes(tmp_path):
    result = run_cookiecutter(tmp_path, "float64=no", "cpu_impl=no", "registration=pybind11")
    assert result.returncode == 0, result.stderr
    project = tmp_path / "out" / "my-cuda-op"
    assert not (project / "tests" / "test_gradcheck.py").exists()
    assert not (project / "tests" / "test_opcheck.py").exists()
    assert not (project / "csrc" / "scaled_gelu_cpu.cpp").exists()
    assert "at::kDouble" not in (project / "csrc" / "scaled_gelu_cuda.cu").read_text()
    assert "Next steps" in result.stdout


def test_post_hook_prints_next_steps():
    text = post_gen.next_steps({"project_slug": "my-op", "package_name": "my_op", "op_name": "fused"})
    assert "cd my-op" in text and "pip install --no-build-isolation -e" in text and "pytest" in text
    assert "python doctor.py" in text


@pytest.mark.parametrize("with_pwd", [True, False])
def test_collisions_are_found_with_a_relative_template_path(tmp_path, with_pwd):
    """The hook runs in the new project's folder; a relative template path is relative to where
    cookiecutter started (found from $PWD, or from the parent process without it)."""
    out = tmp_path / "out"
    out.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PWD"}
    if with_pwd:
        env["PWD"] = str(tmp_path)
    template = os.path.relpath(ROOT, tmp_path)
    result = subprocess.run([*COOKIECUTTER, "--no-input", template, "-o", str(out), "op_name=x"],
                            cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    assert result.returncode != 0
    assert "ERROR: op_name: 'x' is a name that the generated my_cuda_op/modules.py" in result.stderr, result.stderr
    assert list(out.iterdir()) == []
