"""Add an op to the package: a copy of an existing op, or of a kind's seed, under a new name, ready to change.

    python new_op.py my_op                      # a copy of {{cookiecutter.op_name}} ({{cookiecutter.kernel}})
    python new_op.py my_op --from other_op      # a copy of another op of the package
    python new_op.py my_op --kind {{ 'rowwise    ' if cookiecutter.kernel == 'elementwise' else 'elementwise' }}   # an op of that kind: the package's first, else its seed

It writes the new op's declaration ({{cookiecutter.package_name}}/ops/<name>.py) and C++ (csrc/ops/<name>.h, .cu
and _cpu.cpp where the source op has one), and registers it in {{cookiecutter.package_name}}/__init__.py. The copy
is of the source's kind (elementwise or rowwise: the engine that runs its functors, csrc/engine/).
Both kinds' engines are in every project; op-seeds/ holds the starter op of the kind this project
was not generated with, which --kind copies while the package has no op of that kind.
Then change its declaration and functors (README.md, "Your op"), rebuild, and run the tests: the
generic tests cover the new op from its declaration.
"""

from __future__ import annotations

import argparse
import keyword
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
PACKAGE = "{{cookiecutter.package_name}}"
SEEDS = ROOT / "op-seeds"
RESERVED = {"ops", "new_op", "register"}


def class_name(op: str) -> str:
    return "".join(part.title() for part in op.split("_"))


def kind_of(declaration: Path) -> str | None:
    """The kind an op's declaration declares (kind="..." in its ops/<op>.py), or None."""
    match = re.search(r'^\s*kind="(\w+)"', declaration.read_text(), re.M)
    return match[1] if match else None


def first_of_kind(folder: Path, kind: str) -> str | None:
    """The first op (by name) of this kind declared in folder, or None."""
    ops = sorted(p.stem for p in folder.glob("*.py") if p.stem != "__init__")
    return next((op for op in ops if kind_of(folder / f"{op}.py") == kind), None)


def files_of(op: str, seed: bool) -> list[Path]:
    """An op's files, its declaration first: the package's own, or a seed's in op-seeds/."""
    declaration = SEEDS / f"{op}.py" if seed else ROOT / PACKAGE / "ops" / f"{op}.py"
    folder = SEEDS if seed else ROOT / "csrc" / "ops"
    return [declaration] + [folder / f"{op}{suffix}" for suffix in (".h", ".cu", "_cpu.cpp")]


def source_for(source: str | None, kind: str | None) -> tuple[str | None, bool, str | None]:
    """(the op to copy, whether it is a seed, None) or (None, False, what is wrong)."""
    if source is None and kind is None:
        return "{{cookiecutter.op_name}}", False, None
    if source is None:
        found = first_of_kind(ROOT / PACKAGE / "ops", kind)
        if found is not None:
            return found, False, None
        seed = first_of_kind(SEEDS, kind) if SEEDS.is_dir() else None
        if seed is None:
            return None, False, f"the package has no {kind} op to copy, and op-seeds/ has no {kind} seed"
        return seed, True, None
    declaration = ROOT / PACKAGE / "ops" / f"{source}.py"
    if kind is not None and declaration.exists() and kind_of(declaration) != kind:
        return None, False, f"{source} is a {kind_of(declaration)} op, not {kind}; leave out --kind or --from"
    return source, False, None


def problem(name: str, source: str, seed: bool) -> str | None:
    """What is wrong with the new op's name, or None."""
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name) or keyword.iskeyword(name) or name in RESERVED:
        return f"{name!r} is not a lower_snake_case identifier an op can take; choose another, e.g. my_op"
    if (ROOT / PACKAGE / "ops" / f"{name}.py").exists():
        return f"the package already has an op {name!r}; choose another name"
    if not seed and not (ROOT / PACKAGE / "ops" / f"{source}.py").exists():
        return f"the package has no op {source!r} to copy (--from); its ops are in {PACKAGE}/ops/"
    return None


def renamed(text: str, source: str, name: str) -> str:
    text = re.sub(rf"\b{source}(_op)?\b", lambda m: name + (m[1] or ""), text)
    return text.replace(class_name(source), class_name(name))


def register(init: str, name: str) -> str:
    """__init__.py with the new op imported, in OPS, and registered."""
    lines = init.splitlines(keepends=True)
    last_import = max(i for i, line in enumerate(lines) if line.startswith("from .ops import "))
    lines.insert(last_import + 1, f"from .ops import {name} as _{name}_declaration\n")
    text = "".join(lines)
    listed = re.compile(r"^ALL_OPS = \((.*)\)$", re.M)
    text = listed.sub(lambda m: f"ALL_OPS = ({m[1].rstrip(',')}, _{name}_declaration.INTERFACE)", text)
    lines = text.splitlines(keepends=True)
    last_register = max(i for i, line in enumerate(lines) if "= _register(" in line)
    while not lines[last_register].rstrip().endswith(")"):  # to the end of that call
        last_register += 1
    lines.insert(last_register + 1, f"{name}, {class_name(name)} = _register(\n    _{name}_declaration.INTERFACE,\n)\n")
    text = "".join(lines)
    return re.sub(
        r"^__all__ = \[(.*)\]$", lambda m: f'__all__ = [{m[1]}, "{class_name(name)}", "{name}"]', text, flags=re.M
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("name", help="the new op's name (lower_snake_case)")
    parser.add_argument("--from", dest="source", help="the op to copy (default: {{cookiecutter.op_name}})")
    parser.add_argument(
        "--kind", choices=("elementwise", "rowwise"), help="copy the package's first op of this kind, else its seed"
    )
    args = parser.parse_args()
    args.source, seed, error = source_for(args.source, args.kind)
    error = error or problem(args.name, args.source, seed)
    if error:
        print(f"ERROR: {error}", file=sys.stderr)
        return 1
    sources, targets = files_of(args.source, seed), files_of(args.name, seed=False)
    copies = {source: target for source, target in zip(sources, targets, strict=True) if source.exists()}
    init = ROOT / PACKAGE / "__init__.py"
    new_init = register(init.read_text(), args.name)  # everything is computed before anything is written
    for source, target in copies.items():
        target.write_text(renamed(source.read_text(), args.source, args.name))
        print(f"wrote {target.relative_to(ROOT)}")
    init.write_text(new_init)
    print(f"registered {args.name} in {init.relative_to(ROOT)}; rebuild (README.md: Edit, build, test) and run pytest")
    return 0


if __name__ == "__main__":
    sys.exit(main())
