"""Faults while generating a project, through the real cookiecutter and scripts/new_project.py.

An existing project folder, an output folder that cannot be written, a refused answer, a failing
hook, an interrupt (Ctrl-C) or a full disk in the middle of rendering: each gives one clear
``ERROR:`` line, leaves nothing half-written, and leaves an existing project untouched unless
--overwrite is given. cookiecutter alone refuses an existing folder (OutputDirExistsException) and
removes a project whose hook failed, but stops half-way on an interrupt or a write error; the
script renders into a hidden folder beside the destination and moves the project into place only
when it is complete.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path

import cookiecutter.generate
import new_project
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


def test_render_only_puts_exactly_the_project_in_place(tmp_path):
    out = tmp_path / "out"
    result = run_script("--output-dir", str(out), "--no-build", "op_name=my_op")
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["my-cuda-op"]  # no staging folder left
    assert (out / "my-cuda-op" / "csrc" / "my_op.cpp").is_file()
    assert "pip install --no-build-isolation -e" in result.stdout


def test_existing_project_is_refused_and_untouched(existing):
    before = snapshot(existing)
    result = run_script("--output-dir", str(existing.parent), "--no-build")
    assert result.returncode == 1
    lines = error_lines(result.stderr)
    assert len(lines) == 1 and "already exists" in lines[0] and "--overwrite" in lines[0], result.stderr
    assert snapshot(existing) == before
    assert sorted(p.name for p in existing.parent.iterdir()) == ["my-cuda-op"]


def test_existing_project_is_refused_after_the_questions_too(existing, monkeypatch, capsys):
    """In a terminal the folder name is known only after the questions: the check comes after rendering."""
    before = snapshot(existing)
    monkeypatch.setattr(new_project, "planned_folder", lambda args: None)
    assert new_project.main(["--output-dir", str(existing.parent), "--no-build"]) == 1
    assert "already exists" in capsys.readouterr().err
    assert snapshot(existing) == before
    assert sorted(p.name for p in existing.parent.iterdir()) == ["my-cuda-op"]


def test_overwrite_replaces_generated_files_and_keeps_others(existing):
    result = run_script("--output-dir", str(existing.parent), "--no-build", "--overwrite")
    assert result.returncode == 0, result.stderr
    assert (existing / "README.md").read_text() != "my notes\n"
    assert (existing / "NOTES.txt").read_text() == "mine\n"
    assert sorted(p.name for p in existing.parent.iterdir()) == ["my-cuda-op"]


def test_existing_file_of_the_project_name_is_refused(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "my-cuda-op").write_text("not a project\n")
    for extra in ([], ["--overwrite"]):
        result = run_script("--output-dir", str(out), "--no-build", *extra)
        assert result.returncode == 1
        assert "already exists" in result.stderr and "ERROR: " in result.stderr
        assert (out / "my-cuda-op").read_text() == "not a project\n"
        assert sorted(p.name for p in out.iterdir()) == ["my-cuda-op"]


def test_output_dir_below_a_file_is_refused(tmp_path):
    """A folder that cannot be created, for any user (root included)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    result = run_script("--output-dir", str(blocker / "projects"), "--no-build")
    assert result.returncode == 1
    lines = error_lines(result.stderr)
    assert len(lines) == 1 and "cannot create the output folder" in lines[0] and "--output-dir" in lines[0]
    assert "Traceback" not in result.stderr
    assert blocker.read_text() == "x"


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0,
                    reason="root writes to a read-only folder; the case below a file covers root")
def test_read_only_output_dir_is_refused(tmp_path):
    out = tmp_path / "read-only"
    out.mkdir()
    out.chmod(0o555)
    try:
        result = run_script("--output-dir", str(out), "--no-build")
    finally:
        out.chmod(0o755)
    assert result.returncode == 1
    assert "cannot write to the output folder" in result.stderr and "Traceback" not in result.stderr
    assert list(out.iterdir()) == []


def test_refused_answer_writes_nothing(tmp_path):
    out = tmp_path / "out"
    result = run_script("--output-dir", str(out), "--no-build", "op_name=x")
    assert result.returncode == 1
    assert "ERROR: op_name: 'x'" in result.stderr and "nothing was written" in result.stderr
    assert list(out.iterdir()) == []


class Interrupt:
    """Replaces cookiecutter's generate_file: writes `after` files, then raises `exception`."""

    def __init__(self, exception: BaseException, after: int = 5):
        self.exception, self.after, self.calls = exception, after, 0
        self.real = cookiecutter.generate.generate_file

    def __call__(self, *args, **kwargs):
        self.calls += 1
        if self.calls > self.after:
            raise self.exception
        return self.real(*args, **kwargs)


@pytest.mark.parametrize("exception, status, message", [
    (KeyboardInterrupt(), 130, "interrupted; nothing was written"),
    (OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)), 1, "could not write the project (No space left on device)"),
])
def test_interrupted_rendering_leaves_nothing(tmp_path, monkeypatch, capsys, exception, status, message):
    out = tmp_path / "out"
    interrupt = Interrupt(exception)
    monkeypatch.setattr(cookiecutter.generate, "generate_file", interrupt)
    assert new_project.main(["--output-dir", str(out), "--no-build"]) == status
    assert interrupt.calls > interrupt.after, "the rendering was not interrupted"
    assert message in capsys.readouterr().err
    assert list(out.iterdir()) == []


def test_interrupted_overwrite_leaves_the_existing_project_untouched(existing, monkeypatch, capsys):
    before = snapshot(existing)
    monkeypatch.setattr(cookiecutter.generate, "generate_file", Interrupt(KeyboardInterrupt()))
    assert new_project.main(["--output-dir", str(existing.parent), "--no-build", "--overwrite"]) == 130
    assert "interrupted" in capsys.readouterr().err
    assert snapshot(existing) == before
    assert sorted(p.name for p in existing.parent.iterdir()) == ["my-cuda-op"]


def test_interrupt_while_swapping_folders_restores_the_existing_project(existing, monkeypatch):
    before = snapshot(existing)
    real_rename, calls = os.rename, []

    def rename(source, target):
        calls.append((source, target))
        if len(calls) == 2:  # the merged project moving into place
            raise KeyboardInterrupt
        return real_rename(source, target)

    monkeypatch.setattr(new_project.os, "rename", rename)
    assert new_project.main(["--output-dir", str(existing.parent), "--no-build", "--overwrite"]) == 130
    assert len(calls) == 3  # out of the way, (interrupted) into place, back
    assert snapshot(existing) == before
    assert sorted(p.name for p in existing.parent.iterdir()) == ["my-cuda-op"]


def test_failing_post_hook_leaves_nothing(tmp_path, monkeypatch, capsys):
    template = tmp_path / "template"
    template.mkdir()
    shutil.copy(ROOT / "cookiecutter.json", template)
    shutil.copytree(ROOT / "hooks", template / "hooks")
    shutil.copytree(ROOT / "{{cookiecutter.project_slug}}", template / "{{cookiecutter.project_slug}}")
    (template / "hooks" / "post_gen_project.py").write_text("import sys\nprint('post hook fails')\nsys.exit(3)\n")
    monkeypatch.setattr(new_project, "TEMPLATE", template)
    out = tmp_path / "out"
    assert new_project.main(["--output-dir", str(out), "--no-build"]) == 1
    assert "ERROR: generation stopped (see above); nothing was written" in capsys.readouterr().err
    assert list(out.iterdir()) == []


def test_failed_build_keeps_the_complete_project_and_says_how_to_build(tmp_path):
    out = tmp_path / "out"
    # pip stops at once on a constraints file that does not exist: a build failure in a second.
    result = run_script("--output-dir", str(out), env={"PIP_CONSTRAINT": str(tmp_path / "missing.txt")})
    assert result.returncode == 1
    assert "ERROR: the build failed" in result.stderr and "pip install --no-build-isolation -e" in result.stderr
    project = out / "my-cuda-op"
    reference = tmp_path / "reference"
    assert run_script("--output-dir", str(reference), "--no-build").returncode == 0
    assert snapshot(project) == snapshot(reference / "my-cuda-op")


def test_replay_reuses_the_last_answers(tmp_path):
    out = tmp_path / "out"
    assert run_script("--output-dir", str(out), "--no-build", "project_name=Replayed Op", "op_name=my_op").returncode == 0
    shutil.rmtree(out / "replayed-op")
    result = run_script("--output-dir", str(out), "--no-build", "--replay")
    assert result.returncode == 0, result.stderr
    assert (out / "replayed-op" / "csrc" / "my_op.cpp").is_file()
    result = run_script("--output-dir", str(out), "--no-build", "--replay")
    assert result.returncode == 1 and "already exists" in result.stderr and "--overwrite" in result.stderr


def test_cookiecutter_alone_refuses_an_existing_folder_and_leaves_it(existing):
    """What the script builds on: cookiecutter without -f stops before writing anything."""
    before = snapshot(existing)
    result = subprocess.run([sys.executable, "-m", "cookiecutter", "--no-input", str(ROOT), "-o", str(existing.parent)],
                            capture_output=True, text=True, check=False)
    assert result.returncode != 0
    assert "already exists" in result.stdout + result.stderr
    assert snapshot(existing) == before
