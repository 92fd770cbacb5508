"""The generated README's "what to touch for which change" table, kept true: on a fresh project, each
change is made the way a user would (``python new_op.py <name>`` for a second op, then editing its
files), and the project, built once, passes its own suite with every op in it. The files and lines
each change edits are counted and printed (``-s``), for the table's figures.

Each change is a new op beside the starter, so one build covers all of them: the generic tests run
every op of the package's OPS against its reference.
"""

from __future__ import annotations

import difflib
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import bake
import pytest
import torch

# The elementwise kind, two dtypes (float64 for gradcheck), CPU kernels: what CI can run.
OPTIONS = {"kernel": "elementwise", "registration": "torch_library", "float16": False, "bfloat16": False,
           "float64": True, "cpu_impl": True}
PACKAGE = bake.NAMES["package_name"]
STARTER = "scaled_gelu"
DECLARATION = f"{PACKAGE}/ops/{{op}}.py"
MATH = "csrc/ops/{op}.h"


@dataclass(frozen=True)
class Change:
    """A row of the table: the op it makes, and the edits (file, old text, new text) after new_op.py."""

    row: str
    op: str
    edits: tuple[tuple[str, str, str], ...]


GELU_GRAD = "(s + acc_t(2) * x * s * (acc_t(1) - s) * GeluTanh<acc_t>::inner_grad(x))"
CHANGES = [
    Change("other math, same signature", "scaled_silu", (
        (DECLARATION, 'torch.nn.functional.gelu(x, approximate="tanh")', "torch.nn.functional.silu(x)"),
        (MATH, "return scale * x * GeluTanh<acc_t>::logistic(x);",
         "return scale * x * fast_div(acc_t(1), acc_t(1) + fast_exp(-x));"),
        (MATH, "const acc_t s = GeluTanh<acc_t>::logistic(x);\n    return dy * scale * " + GELU_GRAD + ";",
         "const acc_t s = fast_div(acc_t(1), acc_t(1) + fast_exp(-x));\n    return dy * scale * (s + x * s * (acc_t(1) - s));"),
    )),
    Change("rename a scalar", "alpha_gelu", (
        (DECLARATION, 'Scalar("scale",', 'Scalar("alpha",'),
        (DECLARATION, "def reference(x: torch.Tensor, scale: float)", "def reference(x: torch.Tensor, alpha: float)"),
        (DECLARATION, "return scale * torch", "return alpha * torch"),
        (MATH, "  acc_t scale;\n\n  C10_HOST_DEVICE acc_t operator()(acc_t x) const { return scale * x",
         "  acc_t alpha;\n\n  C10_HOST_DEVICE acc_t operator()(acc_t x) const { return alpha * x"),
        (MATH, "  acc_t scale;\n\n  C10_HOST_DEVICE acc_t operator()(acc_t dy, acc_t x) const {",
         "  acc_t alpha;\n\n  C10_HOST_DEVICE acc_t operator()(acc_t dy, acc_t x) const {"),
        (MATH, "return dy * scale * (s +", "return dy * alpha * (s +"),
    )),
    Change("add a scalar", "shifted_gelu", (
        (DECLARATION, "params=[Scalar(\"scale\", 1.0, examples=(0.75, -1.5, 0.0, 3.0, 1e-3))],",
         "params=[Scalar(\"scale\", 1.0, examples=(0.75, -1.5, 0.0, 3.0, 1e-3)), Scalar(\"shift\", 0.0, examples=(0.5,))],"),
        (DECLARATION, "def reference(x: torch.Tensor, scale: float)", "def reference(x: torch.Tensor, scale: float, shift: float)"),
        (DECLARATION, 'approximate="tanh")\n', 'approximate="tanh") + shift\n'),
        (MATH, "  acc_t scale;\n\n  C10_HOST_DEVICE acc_t operator()(acc_t x) const { return scale * x * GeluTanh<acc_t>::logistic(x); }",
         "  acc_t scale;\n  acc_t shift;\n\n  C10_HOST_DEVICE acc_t operator()(acc_t x) const { return scale * x * GeluTanh<acc_t>::logistic(x) + shift; }"),
        (MATH, "  acc_t scale;\n\n  C10_HOST_DEVICE acc_t operator()(acc_t dy, acc_t x) const {",
         "  acc_t scale;\n  acc_t shift;\n\n  C10_HOST_DEVICE acc_t operator()(acc_t dy, acc_t x) const {"),
    )),
    Change("add an input", "gated_gelu", (
        (DECLARATION, 'inputs=[Tensor("x")],', 'inputs=[Tensor("x"), Tensor("gate")],'),
        (DECLARATION, 'saves=["x"],', 'saves=["x", "gate"],'),
        (DECLARATION, "def reference(x: torch.Tensor, scale: float)", "def reference(x: torch.Tensor, gate: torch.Tensor, scale: float)"),
        (DECLARATION, 'approximate="tanh")\n', 'approximate="tanh") * gate\n'),
        (MATH, "C10_HOST_DEVICE acc_t operator()(acc_t x) const { return scale * x * GeluTanh<acc_t>::logistic(x); }",
         "C10_HOST_DEVICE acc_t operator()(acc_t x, acc_t gate) const { return scale * x * GeluTanh<acc_t>::logistic(x) * gate; }"),
        (MATH, "C10_HOST_DEVICE acc_t operator()(acc_t dy, acc_t x) const {\n    const acc_t s = GeluTanh<acc_t>::logistic(x);\n    return dy * scale * " + GELU_GRAD + ";",
         "C10_HOST_DEVICE Values<acc_t, 2> operator()(acc_t dy, acc_t x, acc_t gate) const {\n    const acc_t s = GeluTanh<acc_t>::logistic(x);\n    return {dy * scale * " + GELU_GRAD + " * gate, dy * scale * x * s};"),
    )),
    Change("a second output", "gelu_and_linear", (
        (DECLARATION, 'outputs=[Tensor("y")],', 'outputs=[Tensor("y"), Tensor("z")],'),
        (DECLARATION, "def reference(x: torch.Tensor, scale: float) -> torch.Tensor:", "def reference(x: torch.Tensor, scale: float):"),
        (DECLARATION, 'approximate="tanh")\n', 'approximate="tanh"), scale * x\n'),
        (MATH, "C10_HOST_DEVICE acc_t operator()(acc_t x) const { return scale * x * GeluTanh<acc_t>::logistic(x); }",
         "C10_HOST_DEVICE Values<acc_t, 2> operator()(acc_t x) const { return {scale * x * GeluTanh<acc_t>::logistic(x), scale * x}; }"),
        (MATH, "C10_HOST_DEVICE acc_t operator()(acc_t dy, acc_t x) const {\n    const acc_t s = GeluTanh<acc_t>::logistic(x);\n    return dy * scale * " + GELU_GRAD + ";",
         "C10_HOST_DEVICE acc_t operator()(acc_t dy, acc_t dz, acc_t x) const {\n    const acc_t s = GeluTanh<acc_t>::logistic(x);\n    return dy * scale * " + GELU_GRAD + " + dz * scale;"),
    )),
    Change("save the output instead of the input", "scaled_exp", (
        (DECLARATION, 'inputs=[Tensor("x")],', 'inputs=[Tensor("x", domain=(-3.0, 3.0))],'),
        (DECLARATION, 'params=[Scalar("scale", 1.0, examples=(0.75, -1.5, 0.0, 3.0, 1e-3))],',
         'params=[Scalar("scale", 1.0, low=-3.0, high=3.0, examples=(0.75, -1.5, 0.0))],'),
        (DECLARATION, 'saves=["x"],', 'saves=["y"],'),
        (DECLARATION, 'return scale * torch.nn.functional.gelu(x, approximate="tanh")', "return torch.exp(scale * x)"),
        (MATH, "return scale * x * GeluTanh<acc_t>::logistic(x);", "return fast_exp(scale * x);"),
        (MATH, "C10_HOST_DEVICE acc_t operator()(acc_t dy, acc_t x) const {\n    const acc_t s = GeluTanh<acc_t>::logistic(x);\n    return dy * scale * " + GELU_GRAD + ";",
         "C10_HOST_DEVICE acc_t operator()(acc_t dy, acc_t y) const {\n    return dy * scale * y;"),
    )),
]


def edit(project: Path, change: Change) -> tuple[int, int]:
    """Make the change's edits; return (files, lines) edited, as a diff counts them."""
    before: dict[Path, str] = {}
    for relative, old, new in change.edits:
        path = project / relative.format(op=change.op)
        text = path.read_text()
        before.setdefault(path, text)
        assert text.count(old) == 1, f"{change.row}: {path.name} has {text.count(old)} copies of {old!r}"
        path.write_text(text.replace(old, new))
    lines = 0
    for path, text in before.items():
        diff = difflib.unified_diff(text.splitlines(), path.read_text().splitlines(), lineterm="", n=0)
        lines += sum(1 for line in diff if line[:1] in "+-" and not line.startswith(("+++", "---")))
    return len(before), lines


@pytest.fixture(scope="module")
def changed_project(tmp_path_factory):
    project = bake.render(OPTIONS, tmp_path_factory.mktemp("changes"), **bake.NAMES)
    counts = {}
    for change in CHANGES:
        result = subprocess.run([sys.executable, "new_op.py", change.op], cwd=project, capture_output=True, text=True)
        assert result.returncode == 0, result.stdout + result.stderr
        counts[change.row] = edit(project, change)
    log = project / "build.log"
    build = bake.build(project, bake.build_env(arch_list="9.0", jobs=2), log)
    assert build.returncode == 0, log.read_text()[-5000:]
    return project, counts


def test_new_op_refuses_bad_names(tmp_path):
    project = bake.render(OPTIONS, tmp_path, **bake.NAMES)
    for name, message in [("Bad-Name", "lower_snake_case"), (STARTER, "already has an op"), ("ops", "lower_snake_case")]:
        result = subprocess.run([sys.executable, "new_op.py", name], cwd=project, capture_output=True, text=True)
        assert result.returncode == 1 and message in result.stderr, result.stderr
    result = subprocess.run([sys.executable, "new_op.py", "fine", "--from", "missing"], cwd=project,
                            capture_output=True, text=True)
    assert result.returncode == 1 and "no op 'missing'" in result.stderr
    assert not (project / PACKAGE / "ops" / "fine.py").exists(), "a refused call wrote a file"


@pytest.mark.template_change
def test_every_change_of_the_table_passes_the_projects_suite(changed_project, tmp_path):
    project, counts = changed_project
    print("\nchange: files, lines edited after new_op.py")
    for row, (files, lines) in counts.items():
        print(f"  {row}: {files} files, {lines} lines")
    init = (project / PACKAGE / "__init__.py").read_text()
    assert all(f"_{c.op}_declaration.INTERFACE" in init for c in CHANGES)
    readme = (project / "README.md").read_text()
    assert all(f"| {c.row} |" in readme for c in CHANGES), "a change the test makes is missing from the README's table"
    tests = bake.run_tests(project, tmp_path / "test.log")
    log = (tmp_path / "test.log").read_text()
    assert tests.failed == 0, log[-8000:]
    assert tests.passed > 0, log[-5000:]
    if torch.cuda.is_available():
        assert tests.unexpected_skips() == 0, log[-5000:]
    # Every op of the package ran through the generic tests (their ids name the op).
    report = (tmp_path / "test.xml").read_text()
    for op in [c.op for c in CHANGES] + [STARTER]:
        assert f"-{op}]" in report or f"[{op}-" in report or f"[{op}]" in report, f"no generic test of {op} ran"
