"""The hooks: every bad answer is refused by name before anything is written, through the real
cookiecutter command of the oldest supported release (requirements-dev.txt's pin, in .venv) and of
the newest on PyPI (conftest.COOKIECUTTERS); the post hook prints the next steps."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


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
        "project_slug": "my-cuda-op", "package_name": "my_cuda_op", "op_name": "scaled_gelu", "torch_abi": "stable",
        "description": "A custom elementwise CUDA operator for PyTorch."}

# Bad identifiers (as op_name and as package_name) and what the message must say about each.
BAD_NAMES = [
    ("1op", "starts with a digit; start with a letter, e.g. op_1op"),
    ("my-op", "contains spaces or hyphens; use underscores, e.g. my_op"),
    ("class", "is a Python keyword; choose another name, e.g. my_class"),
    ("import", "is a Python keyword"),
    ("match", "is a Python keyword"),
    ("template", "is a C++ keyword; choose another name, e.g. my_template"),
    ("torch", "would shadow"),
    ("", "is empty; type a lower_snake_case name"),
    ("my op", "contains spaces or hyphens"),
    ("my'op", "quotes"),
    ('my"op', "quotes"),
    ("my\\op", "backslash"),
    ("{{7*7}}", "template/shell syntax"),
    ("$(touch x)", "template/shell syntax"),
    ("op;rm", "is not lower_snake_case"),
    ("Op", "is not lower_snake_case"),
    ("my__op", "contains a double underscore, which C++ reserves"),
    ("a" * 65, "is longer than 64 characters"),
]
# Other bad answers: (answers, the key refused, what its message says).
BAD_ANSWERS = [
    ({"project_slug": "my cuda op"}, "project_slug", "is not a valid folder and distribution name"),
    ({"project_slug": "my'op"}, "project_slug", "is not a valid folder"),
    ({"project_slug": ".."}, "project_slug", "is not a valid folder"),
    ({"project_name": ""}, "project_name", "is empty; type a name such as My CUDA Op"),
    ({"project_name": "$(touch x)"}, "project_name", "template or shell syntax"),
    ({"project_name": "{{ cookiecutter.x }}"}, "project_name", "template or shell syntax"),
    ({"author": "$(whoami)"}, "author", "template or shell syntax"),
    ({"author": " "}, "author", "is empty; type your name"),
    ({"email": "not an email"}, "email", "is not an email address; type one such as you@example.com"),
    ({"version": "one"}, "version", "is not a PEP 440 version; type one such as 0.1.0"),
    ({"float16": "maybe"}, "float16", "'maybe' is not yes or no; type yes or no"),
    ({"cpu_impl": "2"}, "cpu_impl", "'2' is not yes or no"),
    ({"torch_abi": "stabel"}, "torch_abi", "'stabel' is not one of stable, versioned; type one of those"),
    ({"registration": "pybind11", "torch_abi": "stable"}, "torch_abi", "pybind11 is always versioned"),
    ({"kernel": "rowwise", "registration": "pybind11", "torch_abi": "stable"}, "torch_abi",
     "pybind11 is always versioned"),
    ({"op_name": "ops"}, "op_name", "is also the name of a module in the generated package"),
    ({"op_name": "print"}, "op_name", "would shadow torch or a Python builtin"),
    ({"op_name": "value_error"}, "op_name", "names the op's module class ValueError"),
    ({"package_name": "os"}, "package_name", "would shadow the module of that name"),
    ({"package_name": "numpy"}, "package_name", "would shadow the module of that name"),
    ({"package_name": "support"}, "package_name", "is also a module or folder of the generated project"),
    ({"package_name": "tests"}, "package_name", "is also a module or folder"),
    ({"package_name": "test_op"}, "package_name", "pytest test module"),
    ({"package_name": "list"}, "package_name", "is a Python builtin"),
]


def run_cookiecutter(cli, tmp_path: Path, *answers: str) -> subprocess.CompletedProcess:
    out = tmp_path / "out"
    out.mkdir()
    return subprocess.run([*cli.command, "--no-input", str(ROOT), "-o", str(out), *answers],
                          cwd=tmp_path, env=cli.env, capture_output=True, text=True, check=False)


def assert_refused(result: subprocess.CompletedProcess, tmp_path: Path, key: str, reason: str) -> None:
    """The hook's own output (stderr) is its ERROR lines and the closing line, no traceback: the hook
    ran to its end. (cookiecutter reports the failed hook on stdout; 2.7 adds a traceback there.)"""
    assert result.returncode != 0
    lines = result.stderr.splitlines()
    assert lines and lines[-1] == "Nothing was generated. Run cookiecutter again with the answers fixed.", result.stderr
    assert all(line.startswith("ERROR: ") for line in lines[:-1]), result.stderr
    assert re.search(f"^ERROR: {key}: .*{re.escape(reason)}", result.stderr, re.M), result.stderr
    assert list((tmp_path / "out").iterdir()) == [], "something was written"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"], "a shell command in an answer ran"


def test_both_cookiecutters_are_tested(cookiecutter_versions):
    """The oldest supported and the newest release, not one of them twice."""
    oldest, newest = cookiecutter_versions["oldest"], cookiecutter_versions["newest"]
    pinned = re.search(r"^cookiecutter==(\S+)$", (ROOT / "requirements-dev.txt").read_text(), re.M)[1]
    assert oldest == pinned
    assert tuple(map(int, newest.split("."))) > tuple(map(int, oldest.split("."))), (oldest, newest)


def test_defaults_are_valid():
    assert pre_gen.validate(GOOD) == []


@pytest.mark.parametrize("key", ["op_name", "package_name"])
@pytest.mark.parametrize("value, reason", BAD_NAMES, ids=[repr(v[:12]) for v, _ in BAD_NAMES])
def test_bad_identifier_is_refused_with_its_key(key, value, reason):
    errors = pre_gen.validate({**GOOD, key: value})
    assert len(errors) == 1, errors
    assert re.match(f"ERROR: {key}: .*{re.escape(reason)}", errors[0]), errors[0]


@pytest.mark.parametrize("answers, key, reason", BAD_ANSWERS, ids=[str(a) for a, _, _ in BAD_ANSWERS])
def test_other_bad_answers_are_refused(answers, key, reason):
    errors = pre_gen.validate({**GOOD, **answers})
    assert [e.split(":")[1].strip() for e in errors] == [key], errors
    assert reason in errors[0], errors[0]


@pytest.mark.parametrize("value, reason", BAD_NAMES, ids=[repr(v[:12]) for v, _ in BAD_NAMES])
def test_cookiecutter_refuses_bad_identifier_and_writes_nothing(cookiecutter_cli, tmp_path, value, reason):
    """One run refuses the name as op_name and as package_name, each by its key."""
    if "{{" in value:  # cookiecutter renders an answer before the hook sees it ({{7*7}} arrives as 49)
        reason = ""
    result = run_cookiecutter(cookiecutter_cli, tmp_path, f"op_name={value}", f"package_name={value}")
    for key in ("op_name", "package_name"):
        assert_refused(result, tmp_path, key, reason)


def cli_rounds(cases: list) -> list[list]:
    """The cases in rounds of at most one per key, so one cookiecutter run checks several keys. An
    answer with a template tag is left out (cookiecutter renders it first, and an undefined variable
    stops it with its own message), as is project_slug '..' (cookiecutter refuses the existing
    folder itself); both still write nothing."""
    rounds: list[list] = []
    for case in cases:
        answers, key, _ = case
        if "{{" in str(answers) or answers.get("project_slug") == "..":
            continue
        free = next((r for r in rounds if key not in {k for _, k, _ in r}), None)
        if free is None:
            rounds.append(free := [])
        free.append(case)
    return rounds


CLI_ROUNDS = cli_rounds(BAD_ANSWERS)


@pytest.mark.parametrize("cases", CLI_ROUNDS, ids=[f"round{i}" for i in range(len(CLI_ROUNDS))])
def test_cookiecutter_refuses_other_bad_answers_and_writes_nothing(cookiecutter_cli, tmp_path, cases):
    # An empty project_name would also empty the derived folder name, which cookiecutter refuses first.
    answers = {"project_slug": "my-cuda-op"}
    for case_answers, _, _ in cases:
        answers.update(case_answers)
    result = run_cookiecutter(cookiecutter_cli, tmp_path, *(f"{k}={v}" for k, v in answers.items()))
    for _, key, reason in cases:
        assert_refused(result, tmp_path, key, reason)


def test_every_other_bad_answer_reaches_the_command_line():
    in_rounds = [case for cases in CLI_ROUNDS for case in cases]
    left_out = [case for case in BAD_ANSWERS if case not in in_rounds]
    assert left_out == [({"project_slug": ".."}, "project_slug", "is not a valid folder"),
                        ({"project_name": "{{ cookiecutter.x }}"}, "project_name", "template or shell syntax")]


@pytest.mark.parametrize("answer", ["kernel=scan", "license=GPL"])
def test_cookiecutter_refuses_an_unknown_choice_and_writes_nothing(cookiecutter_cli, tmp_path, answer):
    """cookiecutter checks a choice itself, before any hook, naming the choices."""
    key, value = answer.split("=")
    result = run_cookiecutter(cookiecutter_cli, tmp_path, answer)
    assert result.returncode != 0
    assert f"{value} provided for choice variable {key}, but the choices are" in result.stderr, result.stderr
    assert list((tmp_path / "out").iterdir()) == []


@pytest.mark.parametrize("value, accepted", [("yes", True), ("no", True), ("True", True), ("off", True),
                                             (False, True), ("sure", False)])
def test_boolean_spellings(value, accepted):
    errors = pre_gen.validate({**GOOD, "float64": value})
    assert (errors == []) == accepted, errors


def test_boolean_no_from_the_command_line_prunes(cookiecutter_cli, tmp_path):
    result = run_cookiecutter(cookiecutter_cli, tmp_path, "float64=no", "cpu_impl=off", "registration=pybind11")
    assert result.returncode == 0, result.stderr
    project = tmp_path / "out" / "my-cuda-op"
    generic = (project / "tests" / "test_ops.py").read_text()
    assert "def test_gradcheck" not in generic and "def test_opcheck" not in generic
    assert not (project / "csrc" / "ops" / "scaled_gelu_cpu.cpp").exists()
    assert (project / "csrc" / "ops" / "scaled_gelu.cu").exists()
    assert "at::kDouble" not in (project / "csrc" / "op.h").read_text()
    assert "Next steps" in result.stdout


def test_post_hook_prints_next_steps():
    text = post_gen.next_steps({"project_slug": "my-op", "package_name": "my_op", "op_name": "fused"})
    assert "cd my-op" in text and "pip install --no-build-isolation -e" in text and "pytest" in text
    assert "python doctor.py" in text
