"""Validate every answer before cookiecutter writes a file.

Each problem is printed as ``ERROR: <key>: <what is wrong, what to type instead>``
and the hook exits with status 1, so cookiecutter removes the (still empty)
project directory. The module is importable unrendered: the answers arrive in
the raw string below as JSON, so a quote or backslash in a value can never
break this file's syntax.
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
CHOICES = {
    "kernel": ("elementwise", "rowwise"),
    "registration": ("torch_library", "pybind11"),
    "license": ("MIT", "BSD-3-Clause", "Apache-2.0"),
}

CPP_KEYWORDS = frozenset(
    """alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t
    char16_t char32_t class compl concept const consteval constexpr constinit const_cast
    continue co_await co_return co_yield decltype default delete do double dynamic_cast else
    enum explicit export extern false float for friend goto if inline int long mutable
    namespace new noexcept not not_eq nullptr operator or or_eq private protected public
    register reinterpret_cast requires return short signed sizeof static static_assert
    static_cast struct switch template this thread_local throw true try typedef typeid
    typename union unsigned using virtual void volatile wchar_t while xor xor_eq""".split()
)
# Names a generated package must not take: they would shadow what it imports.
SHADOWED_PACKAGES = frozenset(
    {"torch", "torchvision", "triton", "numpy", "pytest", "setuptools", "pybind11", "ninja",
     "cookiecutter", "jinja2", "typing_extensions", "at", "c10", "std", "cuda", "test", "tests"}
)
# Modules inside the generated package; an op of the same name would hide one of them.
PACKAGE_MODULES = frozenset({"ops", "modules", "reference", "_registration", "_C"})


# Template and shell syntax, spelled so that this file itself stays free of template tags.
SUSPICIOUS_TOKENS = tuple("{" + c for c in ("{", "%", "#")) + ("$(", "`")


def _looks_like_template(value: str) -> bool:
    return any(token in value for token in SUSPICIOUS_TOKENS)


def check_identifier(key: str, value: str, example: str) -> str | None:
    """Return why ``value`` cannot be a C++ and Python identifier, or None."""
    if not value:
        return f"is empty; type a lower_snake_case name such as {example}"
    if _looks_like_template(value) or any(c in value for c in "\"'\\"):
        return f"{value!r} contains quotes, a backslash or template/shell syntax; use only a-z, 0-9 and _, e.g. {example}"
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
    if key == "package_name" and (value in SHADOWED_PACKAGES or value in sys.stdlib_module_names):
        return f"{value!r} would shadow the module of that name; choose another name, e.g. my_{value}"
    if key == "op_name" and (value in SHADOWED_PACKAGES or value in dir(builtins)):
        return f"{value!r} would shadow torch or a Python builtin; choose another name, e.g. fused_{value}"
    return None


def validate(answers: dict) -> list[str]:
    """Return one ``ERROR: key: ...`` line for every answer that cannot work."""
    errors: dict[str, str] = {}

    def text(key: str) -> str:
        value = answers.get(key, "")
        return value if isinstance(value, str) else str(value)

    for key, example in (("package_name", "my_cuda_op"), ("op_name", "scaled_gelu")):
        problem = check_identifier(key, text(key), example)
        if problem:
            errors[key] = problem

    slug = text("project_slug")
    if not SLUG.fullmatch(slug) or ".." in slug:
        errors["project_slug"] = (
            f"{slug!r} is not a valid folder and distribution name; use letters, digits, '-', '_' "
            "and '.', starting with a letter or digit, e.g. my-cuda-op"
        )

    project_name = text("project_name")
    if not project_name.strip():
        errors["project_name"] = "is empty; type a name such as My CUDA Op"
    elif _looks_like_template(project_name) or any(ord(c) < 32 for c in project_name):
        errors["project_name"] = (
            f"{project_name!r} contains template or shell syntax or control characters; "
            "use plain words, e.g. My CUDA Op"
        )

    for key in ("author", "description"):
        value = text(key)
        if _looks_like_template(value) or any(ord(c) < 32 for c in value):
            errors[key] = f"{value!r} contains template or shell syntax or control characters; use plain text"
    if not text("author").strip():
        errors.setdefault("author", "is empty; type your name")

    if not EMAIL.fullmatch(text("email")):
        errors["email"] = f"{text('email')!r} is not an email address; type one such as you@example.com"
    if not VERSION.fullmatch(text("version")):
        errors["version"] = f"{text('version')!r} is not a PEP 440 version; type one such as 0.1.0"

    for key in BOOLEAN_KEYS:
        value = answers.get(key, True)
        if not isinstance(value, bool) and str(value).strip().lower() not in BOOLEAN_WORDS:
            errors[key] = f"{value!r} is not yes or no; type yes or no"
    for key, allowed in CHOICES.items():
        if answers.get(key) not in allowed:
            errors[key] = f"{answers.get(key)!r} is not one of {', '.join(allowed)}; type one of those"

    op_name = text("op_name")
    if "op_name" not in errors and op_name in PACKAGE_MODULES:
        errors["op_name"] = f"{op_name!r} is also the name of a module in the generated package; choose another, e.g. my_{op_name}"

    return [f"ERROR: {key}: {message}" for key, message in errors.items()]


def main() -> int:
    errors = validate(json.loads(ANSWERS_JSON))
    for line in errors:
        print(line, file=sys.stderr)
    if errors:
        print("Nothing was generated. Run cookiecutter again with the answers fixed.", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
