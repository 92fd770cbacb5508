"""scripts/new_project.py (README command 1, through scripts/new-project.sh) on the real cookiecutter:
the defaults without a terminal, an existing project folder, -f, --replay, a refused answer and a
failing build each end in one clear ``ERROR:`` line or a complete project, never half of one."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "new_project.py"


@pytest.fixture(autouse=True)
def private_home(tmp_path, monkeypatch):
    """cookiecutter keeps its replay files under ~; keep the user's out of the tests."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


def run_script(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, check=False,
                          stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})})


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def error_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("ERROR: ")]


@pytest.fixture
def existing(tmp_path) -> Path:
    """A generated project with a changed file and a file of the user's own."""
    out = tmp_path / "out"
    result = run_script("--output-dir", str(out), "--no-build")
    assert result.returncode == 0, result.stderr
    project = out / "my-cuda-op"
    (project / "README.md").write_text("my notes\n")
    (project / "NOTES.txt").write_text("mine\n")
    return project


def test_render_only_takes_the_defaults_and_the_answers(tmp_path):
    out = tmp_path / "out"
    result = run_script("--output-dir", str(out), "--no-build", "op_name=my_op")
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["my-cuda-op"]
    assert (out / "my-cuda-op" / "csrc" / "ops" / "my_op.cu").is_file()
    assert "pip install --no-build-isolation -e" in result.stdout


def test_existing_project_is_refused_and_untouched(existing):
    before = snapshot(existing)
    result = run_script("--output-dir", str(existing.parent), "--no-build")
    assert result.returncode == 1
    lines = error_lines(result.stderr)
    assert len(lines) == 1 and "already exists" in lines[0], result.stderr
    assert "Traceback" not in result.stderr
    assert snapshot(existing) == before


def test_overwrite_replaces_generated_files_and_keeps_others(existing):
    result = run_script("--output-dir", str(existing.parent), "--no-build", "-f")
    assert result.returncode == 0, result.stderr
    assert (existing / "README.md").read_text() != "my notes\n"
    assert (existing / "NOTES.txt").read_text() == "mine\n"


@pytest.mark.parametrize("answer, key", [("op_name=1op", "op_name"), ("float16=maybe", "float16")])
def test_refused_answer_writes_nothing(tmp_path, answer, key):
    out = tmp_path / "out"
    result = run_script("--output-dir", str(out), "--no-build", answer)
    assert result.returncode == 1
    assert f"ERROR: {key}: " in result.stderr and "Traceback" not in result.stderr, result.stderr
    assert list(out.iterdir()) == []


def test_unknown_choice_is_one_error_line(tmp_path):
    out = tmp_path / "out"
    result = run_script("--output-dir", str(out), "--no-build", "kernel=scan")
    assert result.returncode == 1
    lines = error_lines(result.stderr)
    assert len(lines) == 1 and "scan" in lines[0] and "elementwise" in lines[0], result.stderr
    assert "Traceback" not in result.stderr
    assert not out.exists() or list(out.iterdir()) == []


def test_replay_reuses_the_last_answers(tmp_path):
    out = tmp_path / "out"
    assert run_script("--output-dir", str(out), "--no-build", "project_name=Replayed Op", "op_name=my_op").returncode == 0
    shutil.rmtree(out / "replayed-op")
    result = run_script("--output-dir", str(out), "--no-build", "--replay")
    assert result.returncode == 0, result.stderr
    assert (out / "replayed-op" / "csrc" / "ops" / "my_op.cu").is_file()


def test_failed_build_keeps_the_complete_project_and_says_how_to_build(tmp_path):
    out = tmp_path / "out"
    # pip stops at once on a constraints file that does not exist: a build failure in a second.
    result = run_script("--output-dir", str(out), env={"PIP_CONSTRAINT": str(tmp_path / "missing.txt")})
    assert result.returncode == 1
    assert "ERROR: the build failed" in result.stderr and "pip install --no-build-isolation -e" in result.stderr
    reference = tmp_path / "reference"
    assert run_script("--output-dir", str(reference), "--no-build").returncode == 0
    assert snapshot(out / "my-cuda-op") == snapshot(reference / "my-cuda-op")


def test_new_project_sh_renders_the_defaults_without_a_terminal(tmp_path):
    """README command 1 as written, up to the build (which tests/test_build.py covers)."""
    out = tmp_path / "out"
    result = subprocess.run(["bash", str(ROOT / "scripts" / "new-project.sh"), "--output-dir", str(out), "--no-build"],
                            capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (out / "my-cuda-op" / "my_cuda_op" / "ops" / "scaled_gelu.py").is_file()
