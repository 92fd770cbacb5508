"""The generator's documentation builds with MkDocs in strict mode (a warning fails the build), and its
options page is generated from cookiecutter.json while it builds, so it cannot drift."""

from __future__ import annotations

import html
import json
import shutil
import subprocess
import sys
from pathlib import Path

import bake

ROOT = bake.TEMPLATE


def build(root: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(root / "mkdocs.yml"),
                           "-d", str(site)], capture_output=True, text=True)


def copy_docs(tmp: Path) -> Path:
    """The documentation sources alone, to change them without touching the repository."""
    root = tmp / "repo"
    shutil.copytree(ROOT / "docs", root / "docs")
    (root / "scripts").mkdir()
    for name in ("mkdocs.yml", "cookiecutter.json", "scripts/mkdocs_hooks.py"):
        shutil.copy(ROOT / name, root / name)
    return root


def test_docs_build_strict(tmp_path):
    result = build(ROOT, tmp_path / "site")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING" not in result.stderr, result.stderr
    for page in ("index", "options/index", "tutorial/index", "performance/index", "troubleshooting/index",
                 "template/index", "reference_ops/index"):
        assert (tmp_path / "site" / f"{page}.html").exists(), page


def test_options_page_lists_every_question_and_derived_value(tmp_path):
    assert build(ROOT, tmp_path / "site").returncode == 0
    page = (tmp_path / "site" / "options" / "index.html").read_text()
    context = json.loads((ROOT / "cookiecutter.json").read_text())
    prompts = context["__prompts__"]
    questions = [key for key in context if not key.startswith("_")]
    assert len(questions) == 16
    for key in questions:
        assert f"<td><code>{key}</code></td>" in page, key
        prompt = prompts[key]["__prompt__"] if isinstance(prompts[key], dict) else prompts[key]
        assert html.escape(prompt) in page, key
        for choice in context[key] if isinstance(context[key], list) else []:
            assert f"<code>{choice}</code>" in page, (key, choice)
    for key in (k for k in context if k.startswith("__") and k != "__prompts__"):
        assert f"<td><code>{key}</code></td>" in page, key
    assert "OPTIONS-TABLE" not in page and "DERIVED-TABLE" not in page


def test_options_follow_cookiecutter_json_and_strict_fails_on_a_warning(tmp_path):
    root = copy_docs(tmp_path)
    context = json.loads((root / "cookiecutter.json").read_text())
    context = {"tile_size": ["128", "256"], **context}
    context["__prompts__"]["tile_size"] = {"__prompt__": "Tile size of the new kernel", "128": "128", "256": "256"}
    (root / "cookiecutter.json").write_text(json.dumps(context))
    assert build(root, tmp_path / "site").returncode == 0
    page = (tmp_path / "site" / "options" / "index.html").read_text()
    assert "<td><code>tile_size</code></td>" in page and "Tile size of the new kernel" in page

    index = root / "docs" / "index.md"
    index.write_text(index.read_text() + "\nSee [the missing page](missing.md).\n")
    broken = build(root, tmp_path / "site2")
    assert broken.returncode != 0
    assert "missing.md" in broken.stderr
