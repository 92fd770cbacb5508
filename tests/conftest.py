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
