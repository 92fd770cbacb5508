"""Shared fixtures of the generator's tests."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import bake  # noqa: E402


def pytest_collection_modifyitems(items):
    """Mark each test that needs a built project `built` (pytest.ini), so a run can pick them by `-m`."""
    for item in items:
        if "built_project" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.built)


@pytest.fixture(scope="session")
def rendered_matrix(tmp_path_factory) -> dict[str, tuple[dict, Path]]:
    """Every option combination rendered once per session: {name: (options, project dir)}."""
    out = tmp_path_factory.mktemp("matrix")
    return {bake.combo_id(c): (c, bake.render(c, out / bake.combo_id(c), **bake.NAMES)) for c in bake.combinations()}


@pytest.fixture(scope="session")
def built_project(tmp_path_factory):
    """build(options) -> (project, build result, build log): each combination rendered and built
    (nvcc, sm_90) once per session, so the tests of its own suite, its wheel and its sdist share one
    compilation. The project is built in place, as `pip install -e` does; a later wheel build
    reuses the compiled objects in its build/ folder."""
    cache: dict[str, tuple[Path, object, Path]] = {}

    def build(options: dict) -> tuple[Path, object, Path]:
        name = bake.combo_id(options)
        if name not in cache:
            root = tmp_path_factory.mktemp(f"built-{name}")
            project = bake.render(options, root, **bake.NAMES)
            log = root / "build.log"
            cache[name] = (project, bake.build(project, bake.build_env(arch_list="9.0", jobs=2), log), log)
        return cache[name]

    return build


# cookiecutter releases the hook tests run under: the oldest supported, pinned in
# requirements-dev.txt and installed in .venv, and the newest on PyPI, installed on first use into
# .cookiecutter-newest (delete the folder to pick up a later release).
NEWEST_COOKIECUTTER = ROOT / ".cookiecutter-newest"


@dataclass(frozen=True)
class CookiecutterCli:
    command: tuple[str, ...]
    env: dict


def cookiecutter_cli_for(release: str) -> CookiecutterCli:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if release == "newest":
        if not (NEWEST_COOKIECUTTER / "cookiecutter").is_dir():
            subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                            "--upgrade", "--target", str(NEWEST_COOKIECUTTER), "cookiecutter"], check=True)
        env["PYTHONPATH"] = str(NEWEST_COOKIECUTTER)
    return CookiecutterCli((sys.executable, "-m", "cookiecutter"), env)


@pytest.fixture(scope="session", params=["oldest", "newest"])
def cookiecutter_cli(request) -> CookiecutterCli:
    return cookiecutter_cli_for(request.param)


@pytest.fixture(scope="session")
def cookiecutter_versions() -> dict[str, str]:
    versions = {}
    for release in ("oldest", "newest"):
        cli = cookiecutter_cli_for(release)
        versions[release] = subprocess.run([*cli.command, "--version"], env=cli.env, capture_output=True, text=True,
                                           check=True).stdout.split()[1]
    return versions
