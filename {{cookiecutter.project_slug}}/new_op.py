"""Add an op to the package: a copy of an existing op under a new name, ready to change.

    python new_op.py my_op                      # a copy of {{cookiecutter.op_name}} ({{cookiecutter.kernel}})
    python new_op.py my_op --from other_op      # a copy of another op of the package
    python new_op.py my_op --kind {{cookiecutter.kernel}}      # a copy of the package's first op of that kind

It writes the new op's declaration ({{cookiecutter.package_name}}/ops/<name>.py) and C++ (csrc/ops/<name>.h, .cu
and _cpu.cpp where the source op has one), and registers it in {{cookiecutter.package_name}}/__init__.py. The copy
is of the source's kind (elementwise or rowwise: the engine that runs its functors, csrc/engine/).
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
RESERVED = {"ops", "new_op", "register"}


def class_name(op: str) -> str:
    return "".join(part.title() for part in op.split("_"))


def kind_of(op: str) -> str | None:
    """The kind an op of the package declares (kind="..." in its ops/<op>.py), or None."""
    match = re.search(r'^\s*kind="(\w+)"', (ROOT / PACKAGE / "ops" / f"{op}.py").read_text(), re.M)
    return match[1] if match else None


def first_of_kind(kind: str) -> str | None:
    """The package's first op (by name) of this kind, or None."""
    ops = sorted(p.stem for p in (ROOT / PACKAGE / "ops").glob("*.py") if p.stem != "__init__")
    return next((op for op in ops if kind_of(op) == kind), None)


def source_for(source: str | None, kind: str | None) -> tuple[str | None, str | None]:
    """(the op to copy, None) or (None, what is wrong)."""
    if source is None and kind is None:
        return "{{cookiecutter.op_name}}", None
    if source is None:
        found = first_of_kind(kind)
        if found is None:
            engines = sorted(p.stem for p in (ROOT / "csrc" / "engine").glob("*.cuh"))
            return None, (
                f"the package has no {kind} op to copy; its engines are {', '.join(engines)} (csrc/engine/): "
                f"generate a project with kernel={kind} for {kind} ops"
            )
        return found, None
    if kind is not None and (ROOT / PACKAGE / "ops" / f"{source}.py").exists() and kind_of(source) != kind:
        return None, f"{source} is a {kind_of(source)} op, not {kind}; leave out --kind or --from"
    return source, None


def problem(name: str, source: str) -> str | None:
    """What is wrong with the new op's name, or None."""
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name) or keyword.iskeyword(name) or name in RESERVED:
        return f"{name!r} is not a lower_snake_case identifier an op can take; choose another, e.g. my_op"
    if (ROOT / PACKAGE / "ops" / f"{name}.py").exists():
        return f"the package already has an op {name!r}; choose another name"
    if not (ROOT / PACKAGE / "ops" / f"{source}.py").exists():
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
    parser.add_argument("--kind", choices=("elementwise", "rowwise"), help="copy the package's first op of this kind")
    args = parser.parse_args()
    args.source, error = source_for(args.source, args.kind)
    error = error or problem(args.name, args.source)
    if error:
        print(f"ERROR: {error}", file=sys.stderr)
        return 1
    copies = {ROOT / PACKAGE / "ops" / f"{args.source}.py": ROOT / PACKAGE / "ops" / f"{args.name}.py"}
    for suffix in (".h", ".cu", "_cpu.cpp"):
        source = ROOT / "csrc" / "ops" / f"{args.source}{suffix}"
        if source.exists():
            copies[source] = ROOT / "csrc" / "ops" / f"{args.name}{suffix}"
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
