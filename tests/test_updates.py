"""A generated project records its answers in .cruft.json (cruft's format), so that a later version of
the template can be rendered with the same answers and its changes reviewed and merged.

A re-render from the recorded answers alone, through the real cookiecutter, reproduces the project
byte for byte, for the defaults and for answers that differ from the defaults in every question.
"""

from __future__ import annotations

import json
from pathlib import Path

import bake
import pytest
from cookiecutter.main import cookiecutter

QUESTIONS = [key for key in json.loads((bake.TEMPLATE / "cookiecutter.json").read_text()) if not key.startswith("_")]
EVERY_ANSWER_CHANGED = {
    "project_name": "Fused Softmax \"Ops\"", "project_slug": "fused-softmax-ops", "package_name": "fsm_ops",
    "kernel": "rowwise", "op_name": "row_softmax", "registration": "pybind11", "torch_abi": "versioned", "float16": "no",
    "bfloat16": False, "float64": "n", "cpu_impl": False,
    "description": "Softmax rows; with 'quotes' and \\ backslashes.",
    "author": "Ada Lovelace", "email": "ada@example.org", "license": "Apache-2.0", "version": "2.3.4",
}


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def rerender(project: Path, out: Path) -> Path:
    """What the README's update recipe runs: the recorded template and answers, nothing else."""
    state = json.loads((project / ".cruft.json").read_text())
    return Path(cookiecutter(state["template"], no_input=True, output_dir=str(out), checkout=state["checkout"],
                             extra_context=state["context"]["cookiecutter"]))


def test_every_question_is_recorded():
    assert set(EVERY_ANSWER_CHANGED) == set(QUESTIONS)


@pytest.mark.parametrize("answers", [{}, EVERY_ANSWER_CHANGED], ids=["defaults", "every-answer-changed"])
def test_rerender_from_the_recorded_answers_is_byte_identical(tmp_path, answers):
    project = bake.render({}, tmp_path / "first", **answers)
    state = json.loads((project / ".cruft.json").read_text())
    assert state["template"] == str(bake.TEMPLATE)
    assert list(state["context"]["cookiecutter"]) == [*QUESTIONS, "__year"]
    for key, value in answers.items():
        assert state["context"]["cookiecutter"][key] == value, key
    again = rerender(project, tmp_path / "again")
    first, second = tree(project), tree(again)
    assert first.keys() == second.keys()
    assert [name for name in first if first[name] != second[name]] == []


def test_the_recorded_year_is_kept(tmp_path):
    """A re-render in a later year keeps the copyright year the project was generated with."""
    project = bake.render({}, tmp_path / "first", license="MIT")
    state = json.loads((project / ".cruft.json").read_text())
    state["context"]["cookiecutter"]["__year"] = "1999"
    (project / ".cruft.json").write_text(json.dumps(state))
    again = rerender(project, tmp_path / "again")
    assert "Copyright (c) 1999" in (again / "LICENSE").read_text()
    assert json.loads((again / ".cruft.json").read_text())["context"]["cookiecutter"]["__year"] == "1999"
