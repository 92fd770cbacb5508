"""Check every answer before cookiecutter writes a file.

Each problem is printed as ``ERROR: <key>: <what is wrong, what to type instead>`` and the hook exits
with status 1, so cookiecutter removes the (still empty) project folder. The answers arrive as JSON in
the raw string below, so a quote or backslash in a value cannot break this file.

Only the answers are checked: spelling, keywords, and the modules a name would shadow. No answer can
collide with a name of the generated code, by construction (docs/template.md; tests/test_construction.py
checks it): its C++ and torch.library names live in the namespace cuop_<package_name>, a prefix no
header and no torch namespace uses; the template's Python names beside an answer are private; and
its own files take names no op name can spell (csrc/_registration.cpp, tests/test_ops.py beside
tests/test_op_<op>.py).
"""

from __future__ import annotations

import builtins
import json
import keyword
import re
import sys

ANSWERS_JSON = r"""{{ cookiecutter | tojson }}"""

IDENTIFIER = re.compile(r"[a-z][a-z0-9_]*")
SLUG = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
EMAIL = re.compile(r"[^@\s\"'\\]+@[^@\s\"'\\]+\.[^@\s\"'\\]+")
VERSION = re.compile(r"\d+(\.\d+)*((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?")
MAX_NAME_LENGTH = 64
BOOLEAN_KEYS = ("float16", "bfloat16", "float64", "cpu_impl")
BOOLEAN_WORDS = {"true", "false", "yes", "no", "y", "n", "1", "0", "on", "off"}
CHOICES = {"kernel": ("elementwise", "rowwise"), "registration": ("torch_library", "pybind11"),
           "torch_abi": ("stable", "versioned"), "license": ("MIT", "BSD-3-Clause", "Apache-2.0")}
CPP_KEYWORDS = frozenset("""alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t
    char16_t char32_t class compl concept const consteval constexpr constinit const_cast continue co_await co_return
    co_yield decltype default delete do double dynamic_cast else enum explicit export extern false float for friend
    goto if inline int long mutable namespace new noexcept not not_eq nullptr operator or or_eq private protected
    public register reinterpret_cast requires return short signed sizeof static static_assert static_cast struct
    switch template this thread_local throw true try typedef typeid typename union unsigned using virtual void
    volatile wchar_t while xor xor_eq""".split())
# Modules besides the standard library that a generated project imports, directly or through torch
# (its requirements) and its build and test tools: a package of the same name would shadow one.
DEPENDENCIES = frozenset("""torch torchgen functorch triton nvidia cuda numpy filelock typing_extensions sympy isympy
    mpmath networkx jinja2 markupsafe fsspec setuptools pkg_resources _distutils_hack pybind11 ninja pip wheel build
    packaging pytest _pytest pluggy iniconfig hypothesis matplotlib cookiecutter""".split())
# The generated project's own modules and folders beside the package (the root, tests/ and
# benchmarks/ are on sys.path when their code runs); pytest also imports every tests/test_*.py.
PROJECT_MODULES = frozenset("setup doctor new_op benchmark benchmarks support conftest tests csrc build dist".split())
PACKAGE_MODULES = frozenset({"ops"})  # the package's public submodule; the ops' declarations are under it
SUSPICIOUS = ("{" + "{", "{" + "%", "{" + "#", "$(", "`")  # template and shell syntax


def class_name(op_name: str) -> str:
    """The nn.Module class named after the op (cookiecutter.json's __class_name)."""
    return op_name.replace("_", " ").title().replace(" ", "")


def unsafe_text(value: str) -> bool:
    return any(token in value for token in SUSPICIOUS) or any(ord(c) < 32 for c in value)


def check_identifier(value: str, example: str) -> str | None:
    """Why ``value`` cannot be a C++ and Python identifier, or None."""
    if not value:
        return f"is empty; type a lower_snake_case name such as {example}"
    if unsafe_text(value) or any(c in value for c in "\"'\\"):
        return (f"{value!r} contains quotes, a backslash or template/shell syntax; use only a-z, 0-9 and _, "
                f"e.g. {example}")
    if " " in value or "-" in value:
        suggestion = re.sub(r"[\s-]+", "_", value.strip()).lower()
        return f"{value!r} contains spaces or hyphens; use underscores, e.g. {suggestion}"
    if not IDENTIFIER.fullmatch(value):
        if value[0].isdigit():
            return f"{value!r} starts with a digit; start with a letter, e.g. op_{value}"
        return f"{value!r} is not lower_snake_case (a-z, 0-9, _; starting with a letter), e.g. {example}"
    if "__" in value:
        return f"{value!r} contains a double underscore, which C++ reserves; use single underscores"
    if len(value) > MAX_NAME_LENGTH:
        return f"{value!r} is longer than {MAX_NAME_LENGTH} characters; choose a shorter name"
    if keyword.iskeyword(value) or keyword.issoftkeyword(value):
        return f"{value!r} is a Python keyword; choose another name, e.g. my_{value}"
    if value in CPP_KEYWORDS:
        return f"{value!r} is a C++ keyword; choose another name, e.g. my_{value}"
    return None


def check_package(value: str) -> str | None:
    """Why ``value`` would shadow a module the generated project imports, or None."""
    if value in sys.stdlib_module_names or value in DEPENDENCIES:
        problem = "would shadow the module of that name, which the project imports"
    elif value in PROJECT_MODULES or value.startswith("test_"):
        problem = "is also a module or folder of the generated project (or a pytest test module name)"
    elif value in dir(builtins):
        problem = f"is a Python builtin, which `import {value}` would hide"
    else:
        return None
    return f"{value!r} {problem}; choose another name, e.g. my_{value}"


def check_op(value: str) -> str | None:
    """Why ``value`` would shadow a name the op's modules use, or None."""
    if value in DEPENDENCIES or value in dir(builtins):
        problem = "would shadow torch or a Python builtin in the op's module"
    elif class_name(value) in dir(builtins):
        problem = f"names the op's module class {class_name(value)}, which would shadow the Python builtin of that name"
    elif value in PACKAGE_MODULES:
        return f"{value!r} is also the name of a module in the generated package; choose another name, e.g. my_{value}"
    else:
        return None
    return f"{value!r} {problem}; choose another name, e.g. fused_{value}"


def check_stable(answers: dict) -> str | None:
    """Why torch_abi=stable cannot build with the other answers, or None."""
    if answers.get("registration") == "pybind11":
        return ("stable needs registration=torch_library: a pybind11 module links libtorch's C++ API, so pybind11 "
                "is always versioned; type versioned, or choose registration=torch_library")
    return None


def validate(answers: dict) -> list[str]:
    """One ``ERROR: key: ...`` line for every answer that cannot work."""
    text = {key: value if isinstance(value, str) else str(value) for key, value in answers.items()}
    package, op, slug, name = (text.get(k, "") for k in ("package_name", "op_name", "project_slug", "project_name"))
    errors = {"package_name": check_identifier(package, "my_cuda_op") or check_package(package),
              "op_name": check_identifier(op, "scaled_gelu") or check_op(op)}
    if not SLUG.fullmatch(slug) or ".." in slug:
        errors["project_slug"] = (f"{slug!r} is not a valid folder and distribution name; use letters, digits, "
                                  "'-', '_' and '.', starting with a letter or digit, e.g. my-cuda-op")
    if not name.strip():
        errors["project_name"] = "is empty; type a name such as My CUDA Op"
    elif unsafe_text(name):
        errors["project_name"] = (f"{name!r} contains template or shell syntax or control characters; "
                                  "use plain words, e.g. My CUDA Op")
    for key in ("author", "description"):
        if unsafe_text(text.get(key, "")):
            errors[key] = f"{text[key]!r} contains template or shell syntax or control characters; use plain text"
    if not text.get("author", "").strip():
        errors.setdefault("author", "is empty; type your name")
    if not EMAIL.fullmatch(text.get("email", "")):
        errors["email"] = f"{text.get('email', '')!r} is not an email address; type one such as you@example.com"
    if not VERSION.fullmatch(text.get("version", "")):
        errors["version"] = f"{text.get('version', '')!r} is not a PEP 440 version; type one such as 0.1.0"
    for key in BOOLEAN_KEYS:
        value = answers.get(key, True)
        if not isinstance(value, bool) and str(value).strip().lower() not in BOOLEAN_WORDS:
            errors[key] = f"{value!r} is not yes or no; type yes or no"
    for key, allowed in CHOICES.items():
        if answers.get(key) not in allowed:
            errors[key] = f"{answers.get(key)!r} is not one of {', '.join(allowed)}; type one of those"
    if answers.get("torch_abi") == "stable" and "torch_abi" not in errors:
        errors["torch_abi"] = check_stable(answers)
    return [f"ERROR: {key}: {message}" for key, message in errors.items() if message]


def main() -> int:
    errors = validate(json.loads(ANSWERS_JSON))
    for line in errors:
        print(line, file=sys.stderr)
    if errors:
        print("Nothing was generated. Run cookiecutter again with the answers fixed.", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
