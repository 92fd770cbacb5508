"""Add an op to the package: a copy of an existing op under a new name, ready to change.

    python new_op.py my_op                      # a copy of scaled_gelu
    python new_op.py my_op --from other_op      # a copy of another op of the package

It writes the new op's declaration (my_cuda_op/ops/<name>.py) and C++ (csrc/ops/<name>.h, .cu
and _cpu.cpp where the source op has one), and registers it in my_cuda_op/__init__.py. Then
change its declaration and functors (README.md, "Your op"), rebuild, and run the tests: the generic
tests cover the new op from its declaration.
"""

from __future__ import annotations

import argparse
import keyword
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
PACKAGE = "my_cuda_op"
RESERVED = {"ops", "new_op", "register"}


def class_name(op: str) -> str:
    return "".join(part.title() for part in op.split("_"))


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
    parser.add_argument("--from", dest="source", default="scaled_gelu", help="the op to copy")
    args = parser.parse_args()
    error = problem(args.name, args.source)
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
