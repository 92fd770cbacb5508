"""Tidy the generated project and print the next steps.

Files the answers did not choose are never written: their template names
render to an empty string and cookiecutter skips them. What is left to do here
is to drop folders that ended up empty and to tell the user what to run next.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

ANSWERS_JSON = r"""{{ cookiecutter | tojson }}"""

# Files that are empty on purpose (PEP 561 marker).
INTENTIONALLY_EMPTY = frozenset({"py.typed"})


def remove_empty(root: Path) -> list[Path]:
    """Delete empty files (except markers) and then empty folders below ``root``."""
    removed = []
    for dirpath, dirnames, filenames in os.walk(root, topdown=False):
        folder = Path(dirpath)
        for name in filenames:
            path = folder / name
            if name not in INTENTIONALLY_EMPTY and path.stat().st_size == 0:
                path.unlink()
                removed.append(path)
        if folder != root and not any(folder.iterdir()):
            folder.rmdir()
            removed.append(folder)
    return removed


def next_steps(answers: dict) -> str:
    slug, package, op = answers["project_slug"], answers["package_name"], answers["op_name"]
    return f"""
Created {slug}/ with the op {package}.{op}.

Next steps:
  cd {slug}
  pip install ninja pytest                            # build and test tools
  pip install --no-build-isolation -e '.[test]'       # builds csrc/ against your installed torch
  pytest                                              # CUDA tests skip where there is no GPU
  python benchmarks/benchmark.py                      # GB/s against eager PyTorch and torch.compile

Change the math in csrc/{op}_math.h and {package}/reference.py; README.md explains the layout.
"""


def main() -> int:
    answers = json.loads(ANSWERS_JSON)
    remove_empty(Path.cwd())
    print(next_steps(answers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
