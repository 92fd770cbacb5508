"""The generated README's "what to touch for which change" table, kept true: on a fresh project of
each kind (elementwise, rowwise), each change is made the way a user would (``python new_op.py
<name>`` for a second op, then editing its files), and the project, built once, passes its own suite
with every op in it. The files and lines each change edits are counted and printed (``-s``), for the
table's figures.

Each change is a new op beside the starter, so one build per kind covers all of them: the generic
tests run every op of the package's OPS against its reference.
"""

from __future__ import annotations

import difflib
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import bake
import pytest
import torch

# Each kind, two dtypes (float64 for gradcheck), CPU kernels: what CI can run.
OPTIONS = {"kernel": "elementwise", "registration": "torch_library", "float16": False, "bfloat16": False,
           "float64": True, "cpu_impl": True}
ROWWISE_OPTIONS = {**OPTIONS, "kernel": "rowwise"}
PACKAGE = bake.NAMES["package_name"]
STARTER = "scaled_gelu"
ROWWISE_STARTER = "scaled_softmax"
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


# The rowwise kind's rows, on copies of scaled_softmax (csrc/ops/<op>.h: Forward, two passes, and
# Backward, one sum).
SOFTMAX_REFERENCE = "return torch.softmax(scale * x, dim=-1)"
SOFTMAX_MATH = 'math="softmax(scale * x, dim=-1)",'
FORWARD_KEEP = "static constexpr bool kKeepTerm = true;  // outputs() gets exp(z - max) as in[0]"
FORWARD_OUTPUTS = (
    "C10_HOST_DEVICE void outputs(const acc_t* in, const Row& row, acc_t* out) const { out[0] = in[0] * row.inv_sum; }"
)
FORWARD_COUNTS = "static constexpr int kOutputs = 1;  // y\n  static constexpr int kRowOutputs = 0;\n  static constexpr int kPasses = 2;"
BACKWARD_COUNTS = (
    "static constexpr int kInputs = 2;   // dy, y\n  static constexpr int kOutputs = 1;  // dx\n"
    "  static constexpr int kRowOutputs = 0;\n  static constexpr int kPasses = 1;"
)
BACKWARD_SUM = """  C10_HOST_DEVICE Sums identity(int /*pass*/) const { return {acc_t(0)}; }
  C10_HOST_DEVICE Sums term(int /*pass*/, const acc_t* in, const Row& /*row*/) const { return {in[0] * in[1]}; }
  C10_HOST_DEVICE Sums combine(int /*pass*/, const Sums& a, const Sums& b) const { return {a.dot + b.dot}; }
  C10_HOST_DEVICE void finish(int /*pass*/, const Sums& total, int64_t /*cols*/, Row& row) const {
    row.dot = total.dot;
  }
  C10_HOST_DEVICE void outputs(const acc_t* in, const Row& row, acc_t* out) const {
    out[0] = scale * in[1] * (in[0] - row.dot);
  }"""
ROWWISE_CHANGES = [
    Change("different row reduction", "scaled_log_softmax", (
        (DECLARATION, SOFTMAX_REFERENCE, "return torch.log_softmax(scale * x, dim=-1)"),
        (DECLARATION, SOFTMAX_MATH, 'math="log_softmax(scale * x, dim=-1)",'),
        (MATH, FORWARD_KEEP, "static constexpr bool kKeepTerm = false;"),
        (MATH, "acc_t inv_sum;", "acc_t log_sum;"),
        (MATH, "row.inv_sum = acc_t(1) / total.value;", "using std::log;\n      row.log_sum = log(total.value);"),
        (MATH, FORWARD_OUTPUTS, "C10_HOST_DEVICE void outputs(const acc_t* in, const Row& row, acc_t* out) const {\n"
         "    out[0] = scaled(in[0], scale) - row.max - row.log_sum;\n  }"),
        (MATH, "return {in[0] * in[1]};", "return {in[0]};"),
        (MATH, "out[0] = scale * in[1] * (in[0] - row.dot);",
         "using std::exp;\n    out[0] = scale * (in[0] - exp(in[1]) * row.dot);"),
    )),
    Change("two row sums in the backward", "rms_norm", (
        (DECLARATION, SOFTMAX_REFERENCE,
         "return scale * x * torch.rsqrt(x.square().mean(-1, keepdim=True) + eps)"),
        (DECLARATION, "def reference(x: torch.Tensor, scale: float)", "def reference(x: torch.Tensor, scale: float, eps: float)"),
        (DECLARATION, 'examples=(0.75, -1.5, 0.0, 3.0, 1e-3))],',
         'examples=(0.75, -1.5, 0.0, 3.0, 1e-3)), Scalar("eps", 1e-6, low=0.0, examples=(1e-5,))],'),
        (DECLARATION, 'saves=["y"],', 'saves=["x"],'),
        (DECLARATION, SOFTMAX_MATH, 'math="scale * x * rsqrt(mean(x^2) + eps)",'),
        # Forward: one pass, the sum of squares; y = scale * x * rstd.
        (MATH, "  acc_t scale;\n\n  static constexpr int kInputs = 1;   // x",
         "  acc_t scale;\n  acc_t eps;\n\n  static constexpr int kInputs = 1;   // x"),
        (MATH, "static constexpr int kPasses = 2;\n  " + FORWARD_KEEP + "\n  static constexpr bool kOnline = true;",
         "static constexpr int kPasses = 1;"),
        (MATH, "    acc_t max;\n    acc_t inv_sum;", "    acc_t rstd;"),
        (MATH, "return {pass == 0 ? -std::numeric_limits<acc_t>::infinity() : acc_t(0)};", "return {acc_t(0)};"),
        (MATH, "return {pass == 0 ? scaled(in[0], scale) : exp_shifted(in[0], scale, row.max)};", "return {in[0] * in[0]};"),
        (MATH, "    using std::fmax;\n    return {pass == 0 ? fmax(a.value, b.value) : a.value + b.value};",
         "    return {a.value + b.value};"),
        (MATH, "    if (pass == 0) {\n      row.max = total.value;\n    } else {\n      row.inv_sum = acc_t(1) / total.value;\n    }",
         "    using std::sqrt;\n    row.rstd = acc_t(1) / sqrt(total.value / acc_t(cols) + eps);"),
        (MATH, "C10_HOST_DEVICE void finish(int pass, const Sums& total, int64_t /*cols*/, Row& row) const {",
         "C10_HOST_DEVICE void finish(int /*pass*/, const Sums& total, int64_t cols, Row& row) const {"),
        (MATH, """  C10_HOST_DEVICE Sums rescale(const Row& from, const Row& to, const Sums& sums) const {
    // Equal maxima change nothing (also both -inf, where exp(from - to) would be nan).
    return {from.max == to.max ? sums.value : sums.value * exp_below_max(from.max - to.max)};
  }
""", ""),
        (MATH, FORWARD_OUTPUTS, "C10_HOST_DEVICE void outputs(const acc_t* in, const Row& row, acc_t* out) const {\n"
         "    out[0] = scale * in[0] * row.rstd;\n  }"),
        # Backward: from dy and x, sum(x^2) and sum(dy * x) in one pass.
        (MATH, "  acc_t scale;\n\n  static constexpr int kInputs = 2;   // dy, y",
         "  acc_t scale;\n  acc_t eps;\n\n  static constexpr int kInputs = 2;   // dy, x"),
        (MATH, "  struct Sums {\n    acc_t dot;\n  };\n  struct Row {\n    acc_t dot;\n  };",
         "  struct Sums {\n    acc_t squares;\n    acc_t dot;\n  };\n  struct Row {\n    acc_t rstd;\n    acc_t dot_mean;\n  };"),
        (MATH, BACKWARD_SUM, """  C10_HOST_DEVICE Sums identity(int /*pass*/) const { return {acc_t(0), acc_t(0)}; }
  C10_HOST_DEVICE Sums term(int /*pass*/, const acc_t* in, const Row& /*row*/) const {
    return {in[1] * in[1], in[0] * in[1]};
  }
  C10_HOST_DEVICE Sums combine(int /*pass*/, const Sums& a, const Sums& b) const {
    return {a.squares + b.squares, a.dot + b.dot};
  }
  C10_HOST_DEVICE void finish(int /*pass*/, const Sums& total, int64_t cols, Row& row) const {
    using std::sqrt;
    row.rstd = acc_t(1) / sqrt(total.squares / acc_t(cols) + eps);
    row.dot_mean = total.dot / acc_t(cols);
  }
  C10_HOST_DEVICE void outputs(const acc_t* in, const Row& row, acc_t* out) const {
    out[0] = scale * row.rstd * (in[0] - in[1] * row.rstd * row.rstd * row.dot_mean);
  }"""),
    )),
    Change("one value per row", "log_sum_exp", (
        (DECLARATION, SOFTMAX_REFERENCE, "return torch.logsumexp(scale * x, dim=-1)"),
        (DECLARATION, 'outputs=[Tensor("y")],', 'outputs=[Tensor("lse", per_row=True)],'),
        (DECLARATION, 'saves=["y"],', 'saves=["x", "lse"],'),
        (DECLARATION, SOFTMAX_MATH, 'math="logsumexp(scale * x, dim=-1)",'),
        # Forward: the same two passes; lse = max + log(sum) = max - log(inv_sum), one value per row.
        (MATH, FORWARD_COUNTS,
         "static constexpr int kOutputs = 0;\n  static constexpr int kRowOutputs = 1;  // lse\n  static constexpr int kPasses = 2;"),
        (MATH, FORWARD_KEEP + "\n", ""),
        (MATH, FORWARD_OUTPUTS, "C10_HOST_DEVICE void row_outputs(const Row& row, acc_t* out) const {\n"
         "    using std::log;\n    out[0] = row.max - log(row.inv_sum);\n  }"),
        # Backward: dx = scale * grad_lse * exp(scale * x - lse), no pass over the row.
        (MATH, BACKWARD_COUNTS,
         "static constexpr int kInputs = 1;     // x\n  static constexpr int kRowInputs = 2;  // grad_lse, lse\n"
         "  static constexpr int kOutputs = 1;    // dx\n  static constexpr int kRowOutputs = 0;\n  static constexpr int kPasses = 0;"),
        (MATH, "  struct Row {\n    acc_t dot;\n  };", "  struct Row {\n    acc_t grad;\n    acc_t lse;\n  };"),
        (MATH, BACKWARD_SUM, """  C10_HOST_DEVICE void start(const acc_t* row_in, Row& row) const {
    row.grad = row_in[0];
    row.lse = row_in[1];
  }
  C10_HOST_DEVICE void outputs(const acc_t* in, const Row& row, acc_t* out) const {
    using std::exp;
    out[0] = scale * row.grad * exp(scaled(in[0], scale) - row.lse);
  }"""),
    )),
]
KINDS = {
    "elementwise": (OPTIONS, STARTER, CHANGES),
    "rowwise": (ROWWISE_OPTIONS, ROWWISE_STARTER, ROWWISE_CHANGES),
}


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


@pytest.fixture(scope="module", params=list(KINDS))
def changed_project(request, tmp_path_factory):
    options, starter, changes = KINDS[request.param]
    project = bake.render(options, tmp_path_factory.mktemp(f"changes-{request.param}"), **bake.NAMES)
    counts = {}
    for change in changes:
        result = subprocess.run([sys.executable, "new_op.py", change.op], cwd=project, capture_output=True, text=True)
        assert result.returncode == 0, result.stdout + result.stderr
        counts[change.row] = edit(project, change)
    log = project / "build.log"
    build = bake.build(project, bake.build_env(arch_list="9.0", jobs=2), log)
    assert build.returncode == 0, log.read_text()[-5000:]
    return project, counts, starter, changes


def test_new_op_refuses_bad_names(tmp_path):
    project = bake.render(OPTIONS, tmp_path, **bake.NAMES)
    for name, message in [("Bad-Name", "lower_snake_case"), (STARTER, "already has an op"), ("ops", "lower_snake_case")]:
        result = subprocess.run([sys.executable, "new_op.py", name], cwd=project, capture_output=True, text=True)
        assert result.returncode == 1 and message in result.stderr, result.stderr
    result = subprocess.run([sys.executable, "new_op.py", "fine", "--from", "missing"], cwd=project,
                            capture_output=True, text=True)
    assert result.returncode == 1 and "no op 'missing'" in result.stderr
    assert not (project / PACKAGE / "ops" / "fine.py").exists(), "a refused call wrote a file"


def new_op(project: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "new_op.py", *args], cwd=project, capture_output=True, text=True)


def op_files(project: Path, op: str) -> dict[str, str]:
    """An op's declaration and C++, by suffix."""
    paths = {".py": project / PACKAGE / "ops" / f"{op}.py"}
    paths |= {suffix: project / "csrc" / "ops" / f"{op}{suffix}" for suffix in (".h", ".cu", "_cpu.cpp")}
    return {suffix: path.read_text() for suffix, path in paths.items() if path.exists()}


def test_new_op_copies_an_op_of_the_kind_asked_for(tmp_path):
    """--kind picks the package's first op of that kind, or else that kind's seed (op-seeds/), which is
    the other kind's starter as a project of that kind renders it."""
    elementwise = bake.render(OPTIONS, tmp_path / "elementwise", **bake.NAMES)
    rowwise = bake.render(ROWWISE_OPTIONS, tmp_path / "rowwise", **bake.NAMES)
    for project, kind in [(elementwise, "rowwise"), (rowwise, "rowwise"), (rowwise, "elementwise"),
                          (elementwise, "elementwise")]:
        result = new_op(project, f"{kind}_copy", "--kind", kind)
        assert result.returncode == 0, result.stderr
        declaration = (project / PACKAGE / "ops" / f"{kind}_copy.py").read_text()
        assert f'kind="{kind}"' in declaration and f'name="{kind}_copy"' in declaration
        assert f"_{kind}_copy_declaration.INTERFACE" in (project / PACKAGE / "__init__.py").read_text()
    # A seed's copy is the copy of the starter of its kind, file for file.
    assert op_files(elementwise, "rowwise_copy") == op_files(rowwise, "rowwise_copy")
    assert op_files(rowwise, "elementwise_copy") == op_files(elementwise, "elementwise_copy")
    assert set(op_files(elementwise, "rowwise_copy")) == {".py", ".h", ".cu", "_cpu.cpp"}
    result = new_op(rowwise, "other", "--kind", "elementwise", "--from", "rowwise_copy")
    assert result.returncode == 1 and "is a rowwise op" in result.stderr, result.stderr


@pytest.mark.template_change
def test_every_change_of_the_table_passes_the_projects_suite(changed_project, tmp_path):
    project, counts, starter, changes = changed_project
    print(f"\n{project.parent.name}: change: files, lines edited after new_op.py")
    for row, (files, lines) in counts.items():
        print(f"  {row}: {files} files, {lines} lines")
    init = (project / PACKAGE / "__init__.py").read_text()
    assert all(f"_{c.op}_declaration.INTERFACE" in init for c in changes)
    readme = (project / "README.md").read_text()
    assert all(f"| {c.row} |" in readme for c in changes), "a change the test makes is missing from the README's table"
    tests = bake.run_tests(project, tmp_path / "test.log")
    log = (tmp_path / "test.log").read_text()
    assert tests.failed == 0, log[-8000:]
    assert tests.passed > 0, log[-5000:]
    if torch.cuda.is_available():
        assert tests.unexpected_skips() == 0, log[-5000:]
    # Every op of the package ran through the generic tests (their ids name the op).
    report = (tmp_path / "test.xml").read_text()
    for op in [c.op for c in changes] + [starter]:
        assert f"-{op}]" in report or f"[{op}-" in report or f"[{op}]" in report, f"no generic test of {op} ran"


# A second op of the other kind (README: "a second op of the other kind"), on a fresh project of each
# kind: the default elementwise project (stable ABI) and a versioned rowwise one, so both ABIs build
# both kinds side by side.
OTHER_KIND = {
    "elementwise": (OPTIONS, STARTER, "rowwise"),
    "rowwise": ({**ROWWISE_OPTIONS, "torch_abi": "versioned"}, ROWWISE_STARTER, "elementwise"),
}


@pytest.mark.template_change
@pytest.mark.parametrize("kind", list(OTHER_KIND))
def test_an_op_of_the_other_kind_passes_the_projects_suite(tmp_path, kind):
    options, starter, other = OTHER_KIND[kind]
    project = bake.render(options, tmp_path / "project", **bake.NAMES)
    op = f"my_{other}"
    result = new_op(project, op, "--kind", other)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f'kind="{other}"' in (project / PACKAGE / "ops" / f"{op}.py").read_text()
    readme = (project / "README.md").read_text()
    assert f"| a second op of the other kind | `python new_op.py <name> --kind {other}`" in readme
    log = tmp_path / "build.log"
    build = bake.build(project, bake.build_env(arch_list="9.0", jobs=2), log)
    assert build.returncode == 0, log.read_text()[-5000:]
    tests = bake.run_tests(project, tmp_path / "test.log")
    test_log = (tmp_path / "test.log").read_text()
    print(f"\n{kind} project with {op}: {tests.passed} passed, {tests.failed} failed, {tests.skipped} skipped")
    assert tests.failed == 0, test_log[-8000:]
    assert tests.passed > 0, test_log[-5000:]
    if torch.cuda.is_available():
        assert tests.unexpected_skips() == 0, test_log[-5000:]
    report = (tmp_path / "test.xml").read_text()
    for name in (starter, op):
        assert f"-{name}]" in report or f"[{name}-" in report or f"[{name}]" in report, f"no generic test of {name} ran"
    for planner in ("elementwise_plan_test.cpp", "rowwise_plan_test.cpp"):
        assert f'name="test_planner[{planner}]"' in report, f"the planner test {planner} did not run"
    # The benchmark offers both ops; on a GPU it times both.
    env = {**os.environ, "PYTHONPATH": str(project)}  # the package is built in place, not installed
    help_text = subprocess.run([sys.executable, "benchmarks/benchmark.py", "--help"], cwd=project,
                               capture_output=True, text=True, env=env)
    assert help_text.returncode == 0 and starter in help_text.stdout and op in help_text.stdout, help_text.stderr
    if torch.cuda.is_available():
        csv = tmp_path / "bench.csv"
        bench = subprocess.run([sys.executable, "benchmarks/benchmark.py", "--dtype", "float32", "--shape", "64x1024",
                                "--rounds", "1", "--replays", "2", "--csv", str(csv)], cwd=project,
                               capture_output=True, text=True, env=env)
        assert bench.returncode == 0, bench.stdout[-3000:] + bench.stderr[-3000:]
        ops = {line.split(",")[0] for line in csv.read_text().splitlines()[1:]}
        assert ops == {starter, op}, ops
