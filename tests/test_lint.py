"""A generated project passes its own pre-commit linters as generated, for every answer.

Every option combination is rendered with a short, the default and a long set of names, and the
linters that the project's .pre-commit-config.yaml lists run over the result: clang-format
(--dry-run -Werror, the project's .clang-format), ruff check, ruff format --check, the YAML and
TOML parses, trailing whitespace, the end-of-file newline and the large-file limit. pre-commit
itself downloads its hooks, so the same tools run here from packages installed with the test
requirements, at the versions the config pins (checked below).

The C++ template is written so that clang-format's layout does not depend on the names: no
continuation line is aligned after a name, and every line holding a name has room for the long
set (op and package names up to 26 and 31 characters).
"""

from __future__ import annotations

import re
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import bake
import pytest
import tomllib
import yaml

BIN = Path(sys.executable).parent
NAME_SETS = {
    "short": {"project_name": "Ab", "op_name": "ab_op"},
    "default": {},
    "long": {"project_name": "My Longer Fused Softmax Kernels", "op_name": "my_longer_fused_softmax_v2"},
}
CPP_SUFFIXES = (".c", ".cc", ".cpp", ".cu", ".cuh", ".h", ".hpp")
LARGE_FILE_BYTES = 500 * 1024  # check-added-large-files' default


def render_one(job: tuple[dict, str, str]) -> Path:
    """One project, as `cookiecutter --no-input` renders it but without the hooks: the answer checks
    take a second a project, and test_hooks_accept_every_name_set runs them once per name set."""
    from cookiecutter.main import cookiecutter

    options, names, root = job
    out = Path(root) / names / bake.combo_id(options)
    return Path(cookiecutter(str(bake.TEMPLATE), no_input=True, output_dir=str(out), accept_hooks=False,
                             extra_context={**options, **NAME_SETS[names]}))


@pytest.fixture(scope="module")
def projects(tmp_path_factory) -> list[Path]:
    """Every combination with every name set (192 projects)."""
    root = tmp_path_factory.mktemp("lint")
    jobs = [(options, names, str(root)) for names in NAME_SETS for options in bake.combinations()]
    # cookiecutter changes the working directory while it renders: one render at a time per process.
    with ProcessPoolExecutor(max_workers=2) as pool:
        return list(pool.map(render_one, jobs, chunksize=16))


@pytest.mark.parametrize("names", NAME_SETS)
def test_hooks_accept_every_name_set(tmp_path, projects, names):
    """The names are valid answers, and the hooks change nothing the linters see."""
    default = bake.combinations()[0]  # the first combination is cookiecutter.json's defaults
    with_hooks = bake.render(default, tmp_path, **NAME_SETS[names])
    without = next(p for p in projects if p.parent.parent.name == names and p.parent.name == bake.combo_id(default))
    relative = {str(p.relative_to(with_hooks)) for p in with_hooks.rglob("*") if p.is_file()}
    assert relative == {str(p.relative_to(without)) for p in without.rglob("*") if p.is_file()}
    for name in relative:
        assert (with_hooks / name).read_bytes() == (without / name).read_bytes(), name


def files(projects: list[Path], suffixes: tuple[str, ...] | None = None) -> list[Path]:
    return sorted(p for project in projects for p in project.rglob("*")
                  if p.is_file() and (suffixes is None or p.name.endswith(suffixes)))


def tool(name: str) -> str:
    path = BIN / name
    assert path.exists(), f"{name} is not installed: python -m pip install -r requirements-dev.txt"
    return str(path)


def offenders(output: str, projects: list[Path]) -> list[str]:
    """The rendered projects (name set / combination) that an output names."""
    return sorted({f"{p.parent.parent.name}/{p.parent.name}" for p in projects if f"{p}/" in output})


def test_linters_are_the_versions_pre_commit_pins(projects):
    config = yaml.safe_load((projects[0] / ".pre-commit-config.yaml").read_text())
    revs = {repo["repo"].rsplit("/", 1)[1]: repo["rev"].lstrip("v") for repo in config["repos"]}
    ruff = subprocess.run([tool("ruff"), "--version"], capture_output=True, text=True, check=True).stdout
    clang = subprocess.run([tool("clang-format"), "--version"], capture_output=True, text=True, check=True).stdout
    assert ruff.split()[-1] == revs["ruff-pre-commit"], (ruff, revs)
    assert re.search(r"version (\S+)", clang)[1] == revs["mirrors-clang-format"], (clang, revs)


def test_names_are_short_default_and_long(projects):
    ops = {p.parent.parent.name: next(p.glob("csrc/ops/*.h")).name.removesuffix(".h") for p in projects}
    packages = {p.parent.parent.name: next(p.glob("*/py.typed")).parent.name for p in projects}
    assert len(ops["short"]) == 5 and len(ops["long"]) == 26
    assert (len(packages["short"]), len(packages["default"]), len(packages["long"])) == (2, 10, 31)
    assert len(projects) == len({p.parent for p in projects}) == 3 * 96


def test_clang_format_clean(projects):
    sources = files(projects, CPP_SUFFIXES)
    assert len(sources) > 3 * 96 * 5
    result = subprocess.run([tool("clang-format"), "--dry-run", "-Werror", "--style=file", *map(str, sources)],
                            capture_output=True, text=True)
    assert result.returncode == 0, f"{offenders(result.stderr, projects)}\n{result.stderr[:6000]}"


def test_ruff_check_clean(projects):
    # ruff takes each file's settings from its project's pyproject.toml.
    result = subprocess.run([tool("ruff"), "check", "--no-cache", "--no-fix", *map(str, projects)],
                            capture_output=True, text=True)
    assert result.returncode == 0, f"{offenders(result.stdout, projects)}\n{result.stdout[:6000]}"


def test_ruff_format_clean(projects):
    result = subprocess.run([tool("ruff"), "format", "--no-cache", "--check", *map(str, projects)],
                            capture_output=True, text=True)
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"{offenders(output, projects)}\n{output[:6000]}"


def test_yaml_and_toml_parse(projects):
    for path in files(projects, (".yaml", ".yml")):
        yaml.safe_load(path.read_text())
    tomls = files(projects, (".toml",))
    assert len(tomls) == len(projects)
    for path in tomls:
        tomllib.loads(path.read_text())


def test_whitespace_end_of_file_and_size(projects):
    problems = []
    for path in files(projects):
        data = path.read_bytes()
        if len(data) > LARGE_FILE_BYTES:
            problems.append(f"{path}: {len(data)} bytes")
        if not data:
            continue
        if not data.endswith(b"\n") or data.endswith(b"\n\n"):
            problems.append(f"{path}: must end with exactly one newline")
        for number, line in enumerate(data.decode().splitlines(), 1):
            if line != line.rstrip():
                problems.append(f"{path}:{number}: trailing whitespace")
    assert not problems, "\n".join(problems[:50])


# -----------------------------------------------------------------------------
# reference_ops: the same linters and rules as the generated projects
# -----------------------------------------------------------------------------

REFERENCE_OPS = Path(__file__).resolve().parents[1] / "reference_ops"


def test_reference_ops_has_the_projects_rules():
    template = Path(bake.TEMPLATE) / "{{cookiecutter.project_slug}}"
    assert (REFERENCE_OPS / ".clang-format").read_text() == (template / ".clang-format").read_text()
    # The template's pyproject.toml is Jinja: its [tool.ruff] tables are read on their own.
    ours, theirs = (tomllib.loads(ruff_tables(path / "pyproject.toml")) for path in (REFERENCE_OPS, template))
    assert ours["tool"]["ruff"] and ours == theirs


def ruff_tables(pyproject: Path) -> str:
    """The [tool.ruff] and [tool.ruff.*] tables of a pyproject.toml, as TOML text."""
    keep, lines = False, []
    for line in pyproject.read_text().splitlines():
        if line.startswith("["):
            keep = line.startswith("[tool.ruff")
        if keep:
            lines.append(line)
    return "\n".join(lines)


def test_reference_ops_lint_clean():
    sources = sorted(p for p in (REFERENCE_OPS / "csrc").iterdir() if p.suffix in CPP_SUFFIXES)
    assert len(sources) > 5
    clang = subprocess.run([tool("clang-format"), "--dry-run", "-Werror", "--style=file", *map(str, sources)],
                           capture_output=True, text=True)  # fmt: skip
    assert clang.returncode == 0, clang.stderr[:6000]
    for args in (["check", "--no-fix"], ["format", "--check"]):
        result = subprocess.run([tool("ruff"), *args, "--no-cache", str(REFERENCE_OPS)], capture_output=True, text=True)
        assert result.returncode == 0, result.stdout[:6000] + result.stderr[:2000]
