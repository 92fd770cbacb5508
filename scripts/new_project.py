"""Render a project with cookiecutter (asking in a terminal, the defaults otherwise) and build it.

Called by scripts/new-project.sh, which sets up the venv first. The rendering is cookiecutter's own
(its Python API, which returns the project folder to build): it refuses an existing project folder
unless -f is given, reuses the last answers with --replay, and removes the project when the hook
refuses an answer.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from cookiecutter.exceptions import CookiecutterException
from cookiecutter.main import cookiecutter

TEMPLATE = Path(__file__).resolve().parents[1]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-o", "--output-dir", type=Path, default=TEMPLATE / "projects",
                        help="where the project folder goes (default: %(default)s)")
    parser.add_argument("-f", "--overwrite-if-exists", action="store_true",
                        help="cookiecutter's -f: write the generated files over an existing project folder")
    parser.add_argument("--replay", action="store_true", help="cookiecutter's --replay: the last run's answers")
    parser.add_argument("--no-build", action="store_true", help="render the project only; do not build it")
    parser.add_argument("answers", nargs="*", metavar="key=value", help="answers, as for cookiecutter")
    args = parser.parse_args(argv)
    if any("=" not in answer for answer in args.answers):
        parser.error("answers are key=value, e.g. op_name=my_op")
    if args.replay and args.answers:
        parser.error("--replay reuses the last answers; give either --replay or key=value answers")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    answers = dict(answer.split("=", 1) for answer in args.answers)
    try:
        project = Path(cookiecutter(
            str(TEMPLATE), output_dir=str(args.output_dir), overwrite_if_exists=args.overwrite_if_exists,
            replay=args.replay or None, no_input=not (args.replay or sys.stdin.isatty()),
            extra_context=answers or None))
    except (CookiecutterException, ValueError, OSError) as exc:
        # A refused answer: the hook has printed which ones and how to fix them. A choice that is not
        # one of the choices, or an existing folder: cookiecutter's message says which.
        print(f"ERROR: {exc}", file=sys.stderr)
        return 1
    retry = f"{sys.executable} -m pip install --no-build-isolation -e '{project}[test]'"
    if args.no_build:
        print(f"Rendered {project}. Build it with\n  {retry}")
        return 0
    print(f"Building {project} (nvcc; a few minutes) ...", flush=True)
    command = [sys.executable, "-m", "pip", "install", "--no-build-isolation", "--quiet", "-e", f"{project}[test]"]
    if subprocess.run(command, check=False).returncode != 0:
        print(f"ERROR: the build failed (pip's output is above). The project is complete in {project}; once "
              f"the cause is fixed, build it with\n  {retry}", file=sys.stderr)
        return 1
    print(f"\nBuilt and installed {project.name} into {sys.prefix}. Run its tests with:\n"
          f"  cd {project} && {sys.executable} -m pytest")
    return 0


if __name__ == "__main__":
    sys.exit(main())
