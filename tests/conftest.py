"""Shared fixtures of the generator's tests."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import bake  # noqa: E402


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
