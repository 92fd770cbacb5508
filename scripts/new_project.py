"""Render a project from the template (interactive in a terminal) and build it into the venv.

Called by scripts/new-project.sh, which sets up the venv first.

The project is rendered into a hidden folder beside its destination and moved into place only when
it is complete, so a refused answer, a failing hook, an interrupt (Ctrl-C) or a full disk leaves
nothing behind, and an existing project folder is never touched unless --overwrite is given (and
then only once the new files are all rendered).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from cookiecutter.exceptions import CookiecutterException, FailedHookException, OutputDirExistsException
from cookiecutter.main import cookiecutter

TEMPLATE = Path(__file__).resolve().parents[1]
STAGING_PREFIX = ".new-project-"


def error(message: str) -> int:
    print(f"ERROR: {message}", file=sys.stderr)
    return 1


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output-dir", type=Path, default=TEMPLATE / "projects",
                        help="where the project folder goes (default: %(default)s)")
    parser.add_argument("--overwrite", action="store_true",
                        help="write over an existing project folder of the same name: the files the template "
                             "generates are replaced, other files are kept")
    parser.add_argument("--replay", action="store_true",
                        help="reuse the answers of the last run (cookiecutter's replay file) instead of asking")
    parser.add_argument("--no-build", action="store_true", help="render the project only; do not build it")
    parser.add_argument("answers", nargs="*", metavar="key=value", help="answers, as for cookiecutter")
    args = parser.parse_args(argv)
    bad = [answer for answer in args.answers if "=" not in answer]
    if bad:
        parser.error(f"answers are key=value, e.g. op_name=my_op; got {' '.join(bad)}")
    if args.replay and args.answers:
        parser.error("--replay reuses the last answers; give either --replay or key=value answers")
    return args


def prepare_output_dir(output_dir: Path) -> str | None:
    """Create the output folder if needed; return why it cannot hold a new project, or None."""
    try:
        output_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return (f"cannot create the output folder {output_dir} ({exc.strerror or exc}); "
                "pass --output-dir with a folder you can write to")
    if not output_dir.is_dir():
        return f"the output folder {output_dir} is not a folder; pass --output-dir with a folder"
    return None


def render(args: argparse.Namespace, staging: Path) -> Path:
    """Render the project into ``staging``; with --overwrite, on top of a copy of what exists."""
    answers = dict(answer.split("=", 1) for answer in args.answers)
    interactive = sys.stdin.isatty() and not args.replay
    return Path(cookiecutter(str(TEMPLATE), no_input=not interactive and not args.replay, replay=args.replay or None,
                             extra_context=answers or None, output_dir=str(staging), overwrite_if_exists=False))


def exists_message(destination: Path) -> str:
    return (f"{destination} already exists; nothing was changed. Pass --overwrite to write the new project over it "
            "(files the template generates are replaced, other files are kept), or choose another project_slug "
            "or --output-dir")


def planned_folder(args: argparse.Namespace) -> str | None:
    """The project folder name the answers give, when known before rendering (no prompts)."""
    if args.replay or sys.stdin.isatty():
        return None
    try:
        from cookiecutter.generate import generate_context
        from cookiecutter.prompt import prompt_for_config

        answers = dict(answer.split("=", 1) for answer in args.answers)
        context = generate_context(context_file=str(TEMPLATE / "cookiecutter.json"), extra_context=answers)
        return str(prompt_for_config(context, no_input=True)["project_slug"]) or None
    except Exception:  # noqa: BLE001 - cookiecutter itself reports bad answers when it renders
        return None


def move_into_place(rendered: Path, destination: Path, overwrite: bool, staging: Path) -> str | None:
    """Put the complete rendering at ``destination``; return why not, or None."""
    if destination.exists() or destination.is_symlink():
        if not destination.is_dir() or destination.is_symlink():
            return f"{destination} already exists and is not a project folder; move it away or choose another name"
        if not overwrite:
            return exists_message(destination)
        # Merge into a copy of the existing project, then swap the two folders: the existing
        # folder is never half-overwritten.
        merged = staging / "merged"
        shutil.copytree(destination, merged, symlinks=True)
        shutil.copytree(rendered, merged, symlinks=True, dirs_exist_ok=True)
        previous = staging / "previous"
        os.rename(destination, previous)
        try:
            os.rename(merged, destination)
        except BaseException:
            os.rename(previous, destination)
            raise
        return None
    os.rename(rendered, destination)
    return None


def generate(args: argparse.Namespace) -> tuple[int, Path | None]:
    """Render and move the project into place; (exit status, the project folder or None)."""
    problem = prepare_output_dir(args.output_dir)
    if problem:
        return error(problem), None
    folder = planned_folder(args)
    if folder and not args.overwrite and (args.output_dir / folder).exists():
        return error(exists_message(args.output_dir / folder)), None
    try:
        staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=args.output_dir))
    except OSError as exc:
        return error(f"cannot write to the output folder {args.output_dir} ({exc.strerror or exc}); "
                     "pass --output-dir with a folder you can write to"), None
    try:
        try:
            rendered = render(args, staging)
        except FailedHookException:
            # The pre-generation hook has printed which answers to fix; a failing post-generation
            # hook has printed its own error.
            return error(f"generation stopped (see above); nothing was written to {args.output_dir}"), None
        except OutputDirExistsException as exc:  # not expected: the staging folder starts empty
            return error(f"{exc}; nothing was written"), None
        except CookiecutterException as exc:
            return error(f"{exc}; nothing was written to {args.output_dir}"), None
        except OSError as exc:
            return error(f"could not write the project ({exc.strerror or exc}); nothing was written to "
                         f"{args.output_dir}"), None
        destination = args.output_dir / rendered.name
        problem = move_into_place(rendered, destination, args.overwrite, staging)
        if problem:
            return error(problem), None
        return 0, destination
    except KeyboardInterrupt:
        print(f"\nERROR: interrupted; nothing was written to {args.output_dir}", file=sys.stderr)
        return 130, None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def build(project: Path) -> int:
    command = [sys.executable, "-m", "pip", "install", "--no-build-isolation", "--quiet", "-e", f"{project}[test]"]
    retry = " ".join([c for c in command[:-1] if c != "--quiet"] + [f"'{project}[test]'"])
    print(f"Building {project} (nvcc; a few minutes) ...", flush=True)
    try:
        result = subprocess.run(command, check=False)
    except KeyboardInterrupt:
        error(f"the build was interrupted. The project is complete in {project}; build it with\n  {retry}")
        return 130
    if result.returncode != 0:
        return error(f"the build failed (pip's output is above). The project is complete in {project}; once the "
                     f"cause is fixed, build it with\n  {retry}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.output_dir = args.output_dir.absolute()
    status, project = generate(args)
    if status or project is None:
        return status
    if args.no_build:
        print(f"Rendered {project}. Build it with\n  {sys.executable} -m pip install --no-build-isolation -e "
              f"'{project}[test]'")
        return 0
    status = build(project)
    if status:
        return status
    print(f"\nBuilt and installed {project.name} into {sys.prefix}. Run its tests with:\n"
          f"  cd {project} && {sys.executable} -m pytest")
    return 0


if __name__ == "__main__":
    sys.exit(main())
