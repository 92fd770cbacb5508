"""Render a project from the template (interactive in a terminal) and build it into the venv.

Called by scripts/new-project.sh, which sets up the venv first.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from cookiecutter.exceptions import CookiecutterException, FailedHookException
from cookiecutter.main import cookiecutter

TEMPLATE = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--output-dir", type=Path, default=TEMPLATE / "projects",
                        help="where the project folder goes (default: %(default)s)")
    parser.add_argument("answers", nargs="*", metavar="key=value", help="answers, as for cookiecutter")
    args = parser.parse_args()
    answers = dict(answer.split("=", 1) for answer in args.answers)
    interactive = sys.stdin.isatty()
    args.output_dir.mkdir(parents=True, exist_ok=True)
    try:
        project = Path(cookiecutter(str(TEMPLATE), no_input=not interactive, extra_context=answers,
                                    output_dir=str(args.output_dir)))
    except FailedHookException:
        return 1  # the hook has printed what to fix
    except CookiecutterException as error:
        print(f"ERROR: {error}", file=sys.stderr)
        return 1

    print(f"Building {project} (nvcc; a few minutes) ...", flush=True)
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-build-isolation", "--quiet", "-e", f"{project}[test]"],
                   check=True)
    print(f"\nBuilt and installed {project.name} into {sys.prefix}. Run its tests with:\n"
          f"  cd {project} && {sys.executable} -m pytest")
    return 0


if __name__ == "__main__":
    sys.exit(main())
