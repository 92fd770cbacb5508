"""Validate every answer before cookiecutter writes a file.

Each problem is printed as ``ERROR: <key>: <what is wrong, what to type instead>``
and the hook exits with status 1, so cookiecutter removes the (still empty)
project directory. The module is importable unrendered: the answers arrive in
the raw string below as JSON, so a quote or backslash in a value can never
break this file's syntax.

Besides the spelling rules, ``op_name`` and ``package_name`` must not collide with a name the
generated project already uses. Those names are read from the template itself each time the hook
runs (``template_collisions``): the Python files and C++ sources the answers select are rendered
with placeholder names, and the new names are checked against every name in every scope they
reach, every file and module path, and every name the C++ sources use outside the package's
namespace. What the template cannot show (names declared by the C/C++/CUDA headers, the modules
torch and the test tools import, torch's op namespaces) is in the lists at the end of this file,
written by ``python tests/template_names.py --write-hook`` from the installed toolchain.
"""

from __future__ import annotations

import ast
import builtins
import functools
import json
import keyword
import os
import re
import symtable
import sys
from pathlib import Path

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
# Names a generated package must not take: they would shadow what it imports. The modules that
# torch, the build and the test tools import are added from DEPENDENCY_MODULES below.
SHADOWED_PACKAGES = frozenset(
    {"torch", "torchvision", "torchaudio", "triton", "numpy", "pytest", "setuptools", "pybind11", "ninja",
     "cookiecutter", "jinja2", "typing_extensions", "hypothesis", "at", "c10", "std", "cuda", "test", "tests"}
)
# Modules inside the generated package; an op of the same name would hide one of them. (The
# template analysis finds these too; the list keeps the message short and works without it.)
PACKAGE_MODULES = frozenset({"ops", "modules", "reference", "_registration", "_C"})

# Placeholder names the template is rendered with to find where the answers land.
PROBE_OP = "zz_op_probe"
PROBE_PACKAGE = "zz_package_probe"
PYTHON_SUFFIXES = (".py",)
CPP_SUFFIXES = (".h", ".hpp", ".cuh", ".c", ".cc", ".cpp", ".cu")

# Template and shell syntax, spelled so that this file itself stays free of template tags.
SUSPICIOUS_TOKENS = tuple("{" + c for c in ("{", "%", "#")) + ("$(", "`")


def _looks_like_template(value: str) -> bool:
    return any(token in value for token in SUSPICIOUS_TOKENS)


def class_name(op_name: str) -> str:
    """The nn.Module class the template names after the op (cookiecutter.json's __class_name)."""
    return op_name.replace("_", " ").title().replace(" ", "")


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
    return None


def check_known_names(key: str, value: str) -> str | None:
    """Return why ``value`` would collide with a module, builtin, C++ or torch name, or None.

    These are the names the template itself cannot show: what Python, torch, the test tools and
    the C/C++/CUDA headers define.
    """
    alternative = f"my_{value}"
    if key == "package_name":
        if value in SHADOWED_PACKAGES or value in sys.stdlib_module_names or value in DEPENDENCY_MODULES:
            return f"{value!r} would shadow the module of that name; choose another name, e.g. {alternative}"
        if value in dir(builtins):
            return (f"{value!r} is a Python builtin, which `import {value}` would hide in every module that "
                    f"imports the package; choose another name, e.g. {alternative}")
        if value in TORCH_NAMESPACES:
            return (f"{value!r} is already a torch.library namespace or an attribute of torch.ops, and the package "
                    f"name is the op's namespace (torch.ops.{value}); choose another name, e.g. {alternative}")
        if value in CPP_MACROS:
            return (f"{value!r} is a macro of the C/C++/CUDA headers the extension includes, and the package "
                    f"name is also its C++ namespace; choose another name, e.g. {alternative}")
        if value in CPP_GLOBAL_NAMES:
            return (f"{value!r} is declared at global scope by the C/C++/CUDA headers the extension includes "
                    f"(a C library or CUDA function, type or namespace), which the package's C++ namespace "
                    f"{value} would clash with; choose another name, e.g. {alternative}")
    if key == "op_name":
        alternative = f"fused_{value}"
        if value in SHADOWED_PACKAGES or value in dir(builtins):
            return f"{value!r} would shadow torch or a Python builtin; choose another name, e.g. {alternative}"
        if class_name(value) in dir(builtins):
            return (f"{value!r} names the op's module class {class_name(value)}, which would shadow the Python "
                    f"builtin of that name; choose another name, e.g. {alternative}")
        if value in PACKAGE_MODULES:
            return f"{value!r} is also the name of a module in the generated package; choose another, e.g. my_{value}"
    return None


# ---------------------------------------------------------------------------------------------
# Names the template uses, read from the template.


def find_template_dir(answers: dict) -> Path | None:
    """The template's project folder, or None when it cannot be found."""
    repo = str(answers.get("_repo_dir") or "")
    # cookiecutter runs the hooks from inside the template (hooks.run_hook_from_repo_dir: work_in),
    # so its working directory is the template's, whatever path it was given.
    candidates = [Path(f"/proc/{os.getppid()}/cwd")]
    if repo:
        candidates.append(Path(repo))
        # A relative template path is relative to where cookiecutter was started, not to the
        # project folder this hook runs in.
        for start in (os.environ.get("PWD"), f"/proc/{os.getppid()}/cwd"):
            if start:
                candidates.append(Path(start) / repo)
    candidates.append(Path(__file__).resolve().parent.parent)
    for base in candidates:
        try:
            context = json.loads((base / "cookiecutter.json").read_text())
            folders = [p for p in base.iterdir() if p.is_dir() and "cookiecutter." in p.name]
        except (OSError, ValueError):
            continue
        if {"op_name", "package_name"} <= set(context) and len(folders) == 1:
            return folders[0].resolve()
    return None


@functools.lru_cache(maxsize=8)
def _environment(extensions: tuple = ()):
    """A Jinja environment as cookiecutter renders with (its extensions and StrictUndefined)."""
    try:
        from cookiecutter.environment import StrictEnvironment

        return StrictEnvironment(context={"cookiecutter": {"_extensions": list(extensions)}},
                                 keep_trailing_newline=True)
    except ImportError:  # imported without cookiecutter: plain Jinja renders this template too
        import jinja2

        return jinja2.Environment(keep_trailing_newline=True, undefined=jinja2.StrictUndefined)


@functools.lru_cache(maxsize=1024)
def _compiled(text: str, extensions: tuple = ()):
    return _environment(extensions).from_string(text)


def render(text: str, context: dict) -> str:
    return _compiled(text, tuple(context.get("_extensions") or ())).render(cookiecutter=context)


@functools.lru_cache(maxsize=8)
def _raw_context(template_dir: Path) -> dict:
    return json.loads((template_dir.parent / "cookiecutter.json").read_text())


@functools.lru_cache(maxsize=8)
def _template_files(template_dir: Path) -> tuple[str, ...]:
    return tuple(sorted(os.path.relpath(os.path.join(folder, name), template_dir)
                        for folder, _, names in os.walk(template_dir) for name in names))


def full_context(answers: dict, template_dir: Path) -> dict:
    """The answers with cookiecutter.json's private (derived) variables added where missing."""
    raw = _raw_context(template_dir)
    context = {key: (value[0] if isinstance(value, list) else value) for key, value in raw.items()
               if not key.startswith("_")}
    context.update(answers)
    for key, value in raw.items():
        if key.startswith("_") and key not in context and isinstance(value, str):
            context[key] = render(value, context)
    return context


def probe_context(context: dict, template_dir: Path) -> dict:
    """``context`` with the op and package named by the placeholders, and what derives from them."""
    probe = {**context, "op_name": PROBE_OP, "package_name": PROBE_PACKAGE}
    changed = {"op_name", "package_name"}
    for key, value in _raw_context(template_dir).items():
        if key.startswith("_") and isinstance(value, str) and any(name in value for name in changed):
            probe[key] = render(value, probe)
            changed.add(key)
    return probe


def _renamer(context: dict, probe: dict):
    """A function mapping a name of the placeholder rendering to the name the answers give."""
    pairs = {probe[key]: str(context.get(key, "")) for key in probe
             if isinstance(probe[key], str) and probe[key] != context.get(key)
             and (PROBE_OP in probe[key] or PROBE_PACKAGE in probe[key] or probe[key] == class_name(PROBE_OP))}
    pairs = {k: v for k, v in pairs.items() if re.fullmatch(r"\w+", k)}
    if not pairs:
        return lambda name: name
    pattern = re.compile("|".join(sorted(map(re.escape, pairs), key=len, reverse=True)))
    return lambda name: pattern.sub(lambda m: pairs[m.group()], name)


def _render_path(relative: str, context: dict) -> str | None:
    """The project path a template path renders to; None when the answers leave the file out."""
    parts = []
    for part in Path(relative).parts:
        rendered = render(part, context) if "{" in part else part
        if not rendered:
            return None
        parts.append(rendered)
    return "/".join(parts)


def _scopes(table):
    yield table
    for child in table.get_children():
        yield from _scopes(child)


@functools.lru_cache(maxsize=256)
def python_facts(source: str, filename: str) -> tuple:
    """What each scope of a module holds: (scope name, names in it, names it looks up globally).

    The first entry is the module scope; ``from __future__`` imports are compiler directives, not
    names, and are left out.
    """
    future = {alias.name for node in ast.parse(source).body
              if isinstance(node, ast.ImportFrom) and node.module == "__future__" for alias in node.names}
    top = symtable.symtable(source, filename, "exec")
    facts = []
    for table in _scopes(top):
        symbols = [s for s in table.get_symbols() if not (table is top and s.get_name() in future)]
        names = tuple(s.get_name() for s in symbols)
        lookups = () if table is top else tuple(
            s.get_name() for s in symbols if s.is_global() and not s.is_assigned() and not s.is_imported())
        facts.append((table.get_name(), names, lookups))
    return tuple(facts)


_CPP_TOKEN = re.compile(r"""//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'|^[ \t]*#(?:\\\n|[^\n])*""",
                        re.S | re.M)
_CPP_IDENTIFIER = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\b")


@functools.lru_cache(maxsize=256)
def cpp_facts(source: str) -> tuple[frozenset, frozenset]:
    """(every identifier, the identifiers outside ``namespace <package>`` blocks) of a C++ source,
    without comments, strings and preprocessor lines."""
    code = _CPP_TOKEN.sub(" ", source)
    everything = frozenset(_CPP_IDENTIFIER.findall(code))
    outside, depth, pos = [], 0, 0
    opening = re.compile(r"\bnamespace\s+" + PROBE_PACKAGE + r"\s*\{")
    while True:
        match = opening.search(code, pos)
        if not match:
            outside.append(code[pos:])
            break
        outside.append(code[pos:match.start()])
        depth, pos = 1, match.end()
        while depth and pos < len(code):
            depth += {"{": 1, "}": -1}.get(code[pos], 0)
            pos += 1
    return everything, frozenset(_CPP_IDENTIFIER.findall(" ".join(outside)))


def _generated_files(answers: dict):
    """(template dir, real context, probe context, {project path: [template paths]}) for these answers."""
    template_dir = find_template_dir(answers)
    if template_dir is None:
        return None
    context = full_context(answers, template_dir)
    probe = probe_context(context, template_dir)
    files: dict[str, list[str]] = {}
    for relative in _template_files(template_dir):
        rendered = _render_path(relative, context)
        if rendered is not None:
            files.setdefault(rendered, []).append(relative)
    return template_dir, context, probe, files


@functools.lru_cache(maxsize=256)
def _render_probe(template_file: str, probe_json: str) -> str:
    return render(Path(template_file).read_text(), json.loads(probe_json))


def template_collisions(answers: dict) -> dict[str, str]:
    """``{key: problem}`` for an op_name or package_name that collides with a name the generated
    project already uses, found by rendering this template's own files."""
    generated = _generated_files(answers)
    if generated is None:
        return {}
    template_dir, context, probe, files = generated
    op, package = str(context["op_name"]), str(context["package_name"])
    rename = _renamer(context, probe)
    probe_json = json.dumps(probe, sort_keys=True)
    problems: dict[str, str] = {}

    def blame(*names: str) -> str:
        return "package_name" if any(PROBE_PACKAGE in n for n in names) else "op_name"

    def report(key: str, message: str) -> None:
        problems.setdefault(key, message)

    # Two template files that land on one project path, or two template folders on one folder.
    lowered: dict[str, str] = {}
    folder_sources: dict[str, set[str]] = {}
    for path, sources in sorted(files.items()):
        if len(sources) > 1 or path.lower() in lowered:
            key = "op_name" if any("op_name" in s for s in sources) else "package_name"
            value = op if key == "op_name" else package
            report(key, f"{value!r} would give one of the generated files the path {path}, which the template "
                        f"already gives another file")
        lowered.setdefault(path.lower(), path)
        parts = path.split("/")
        for source in sources:
            source_parts = Path(source).parts
            for depth in range(1, len(parts)):
                folder_sources.setdefault("/".join(parts[:depth]), set()).add("/".join(source_parts[:depth]))
    for folder, sources in sorted(folder_sources.items()):
        if len(sources) > 1:
            key = "package_name" if any("package_name" in s for s in sources) else "op_name"
            value = package if key == "package_name" else op
            report(key, f"{value!r} would put two of the template's folders into one, the generated {folder}/")
    package_dirs = {path.rsplit("/", 1)[0] for path in files if path.endswith("/__init__.py")}

    # Module names importable beside the package: the project root (pip install -e, python -m
    # pytest), tests/ (pytest puts it on sys.path) and benchmarks/ (scripts run from there).
    for path in sorted(files):
        folder, _, name = path.rpartition("/")
        if name == f"{package}.py" and folder not in package_dirs:
            report("package_name", f"{package!r} is also the module {path} of the generated project, which "
                                   f"would be imported in place of the package")

    # Python: a new name that meets a name already in one of the scopes it reaches.
    for path, sources in sorted(files.items()):
        if not path.endswith(PYTHON_SUFFIXES) or len(sources) != 1:
            continue
        source = _render_probe(str(template_dir / sources[0]), probe_json)
        try:
            facts = python_facts(source, path)
        except SyntaxError:
            continue  # the generator's own tests report a file that does not compile
        extra = ()
        if path.endswith("/__init__.py"):  # the package's attributes include its submodules
            folder = path.rsplit("/", 1)[0]
            extra = tuple(p[len(folder) + 1:].split("/")[0].removesuffix(".py") for p in files
                          if p.startswith(folder + "/") and p.endswith(".py") and not p.endswith("/__init__.py"))
        module_names = facts[0][1] + extra
        for index, (scope, names, lookups) in enumerate(facts):
            where = "at module level" if index == 0 else f"in {scope}()"
            seen: dict[str, str] = {}
            for name in names + (extra if index == 0 else ()):
                new = rename(name)
                if seen.get(new, name) != name:
                    key = blame(seen[new], name)
                    value = package if key == "package_name" else op
                    made = "is a name that" if new == value else f"makes the name {new!r}, which"
                    report(key, f"{value!r} {made} the generated {path} already uses {where} for something else")
                seen.setdefault(new, name)
            for name in lookups:
                new = rename(name)
                owners = [m for m in module_names if m != name and rename(m) == new]
                if owners:
                    key = blame(name, *owners)
                    value = package if key == "package_name" else op
                    report(key, f"{value!r} would hide the name {new!r} that {scope}() in the generated {path} "
                                f"looks up")

    # C++: the package is a namespace at global scope; the op's names live inside it.
    for path, sources in sorted(files.items()):
        if not path.endswith(CPP_SUFFIXES) or len(sources) != 1:
            continue
        everything, outside = cpp_facts(_render_probe(str(template_dir / sources[0]), probe_json))
        # The package's namespace is a global name: it meets every name used outside it (the op's
        # entry points among them, where registration.cpp names them after `using namespace`).
        if package in {rename(name) for name in outside if name != PROBE_PACKAGE}:
            report("package_name", f"{package!r} is a name the generated {path} already uses outside the package's "
                                   f"C++ namespace, which has the package's name")
        template_names = {n for n in everything if PROBE_OP not in n and PROBE_PACKAGE not in n}
        for name in sorted(everything - template_names):
            if PROBE_OP not in name:
                continue
            new = rename(name)
            if new in template_names or new in CPP_GLOBAL_NAMES or new in CPP_MACROS:
                report("op_name", f"{op!r} makes the C++ name {new!r} in the generated {path}, which is already "
                                  f"{'used there' if new in template_names else 'declared by the headers it includes'}")
    return problems


def _suggestion(key: str, value: str, answers: dict) -> str | None:
    for candidate in ((f"my_{value}", f"{value}_op", f"fused_{value}") if key == "op_name"
                      else (f"my_{value}", f"{value}_ops", f"{value}_kernels")):
        trial = {**answers, key: candidate}
        if (check_identifier(key, candidate, candidate) is None and check_known_names(key, candidate) is None
                and key not in template_collisions(trial)):
            return candidate
    return None


def validate(answers: dict) -> list[str]:
    """Return one ``ERROR: key: ...`` line for every answer that cannot work."""
    errors: dict[str, str] = {}

    def text(key: str) -> str:
        value = answers.get(key, "")
        return value if isinstance(value, str) else str(value)

    for key, example in (("package_name", "my_cuda_op"), ("op_name", "scaled_gelu")):
        problem = check_identifier(key, text(key), example) or check_known_names(key, text(key))
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

    # Collisions with the generated code, once every answer that shapes its files can be rendered.
    renderable = all(check_identifier(key, text(key), "x") is None for key in ("op_name", "package_name"))
    if renderable and not any(key in errors for key in ("project_slug", *BOOLEAN_KEYS, *CHOICES)):
        for key, problem in template_collisions(answers).items():
            if key not in errors:
                suggestion = _suggestion(key, text(key), answers)
                errors[key] = f"{problem}; choose another name" + (f", e.g. {suggestion}" if suggestion else "")

    return [f"ERROR: {key}: {message}" for key, message in errors.items()]


def main() -> int:
    errors = validate(json.loads(ANSWERS_JSON))
    for line in errors:
        print(line, file=sys.stderr)
    if errors:
        print("Nothing was generated. Run cookiecutter again with the answers fixed.", file=sys.stderr)
    return 1 if errors else 0


# ---------------------------------------------------------------------------------------------
# Names from outside the template. Written by `python tests/template_names.py --write-hook`
# (which adds what the installed torch, CUDA and C library declare to what is here) and checked
# by tests/test_name_collisions.py; do not edit by hand.
# BEGIN GENERATED NAMES
DEPENDENCY_MODULES = frozenset("""
cuda filelock fsspec functorch hypothesis iniconfig isympy jinja2 markupsafe mpmath networkx ninja
numpy nvidia packaging pkg_resources pluggy py pygments pytest setuptools sortedcontainers sympy
torch torchgen triton typing_extensions wheel
""".split())
TORCH_NAMESPACES = frozenset("""
aten c10d c10d_functional debug_mode_ops debugprims flex_lib fsdp higher_order import_module
inductor load_library loaded_libraries mkl mkldnn mkldnn_prepacked onednn onnx onnx_symbolic
prepacked prim prims profiler quantization quantized rngprims sparse static_runtime streams symm_mem
""".split())
CPP_MACROS = frozenset("""
alloca assert_perror be16toh be32toh be64toh errno htobe16 htobe32 htobe64 htole16 htole32 htole64
isalnum_l isalpha_l isascii isascii_l isblank_l iscntrl_l isdigit_l isgraph_l islower_l isprint_l
ispunct_l isspace_l issubnormal isupper_l isxdigit_l le16toh le32toh le64toh math_errhandling
offsetof pthread_cleanup_pop pthread_cleanup_pop_restore_np pthread_cleanup_push
pthread_cleanup_push_defer_np sched_priority st_atime st_ctime st_mtime stderr stdin stdout strdupa
strndupa timeradd timerclear timercmp timerisset timersub toascii toascii_l va_arg va_copy va_end
va_start
""".split())
CPP_GLOBAL_NAMES = frozenset("""
a64l abi abort abs access acct acos acosf acosf128 acosf32 acosf32x acosf64 acosf64x acosh acoshf
acoshf128 acoshf32 acoshf32x acoshf64 acoshf64x acoshl acosl adjtime alarm aligned_alloc all
allocfunc any arc4random arc4random_buf arc4random_uniform asctime asctime_r asin asinf asinf128
asinf32 asinf32x asinf64 asinf64x asinh asinhf asinhf128 asinhf32 asinhf32x asinhf64 asinhf64x
asinhl asinl asprintf at at_quick_exit atan atan2 atan2f atan2f128 atan2f32 atan2f32x atan2f64
atan2f64x atan2l atanf atanf128 atanf32 atanf32x atanf64 atanf64x atanh atanhf atanhf128 atanhf32
atanhf32x atanhf64 atanhf64x atanhl atanl atexit atof atoi atol atoll ballot basename bcmp bcopy
binary_function_traits binaryfunc bind_textdomain_codeset bindtextdomain blkcnt64_t blkcnt_t
blksize_t brk bsearch btowc bzero c10 c10_complex_math caddr_t caffe2 calloc canonicalize
canonicalize_file_name canonicalizef canonicalizef128 canonicalizef32 canonicalizef32x
canonicalizef64 canonicalizef64x canonicalizel cbrt cbrtf cbrtf128 cbrtf32 cbrtf32x cbrtf64 cbrtf64x
cbrtl ceil ceilf ceilf128 ceilf32 ceilf32x ceilf64 ceilf64x ceill char1 char2 char3 char4 chdir
chmod chown chroot cl_context_flags cl_context_flags_enum cl_event_flags cl_event_flags_enum
clearenv clearerr clearerr_unlocked clock clock64 clock_adjtime clock_getcpuclockid clock_getres
clock_gettime clock_nanosleep clock_settime clock_t clockid_t clone close close_range closefrom
comparison_fn_t confstr cookie_close_function_t cookie_io_functions_t cookie_read_function_t
cookie_seek_function_t cookie_write_function_t cooperative_groups copy_file_range copysign copysignf
copysignf128 copysignf32 copysignf32x copysignf64 copysignf64x copysignl cos cosf cosf128 cosf32
cosf32x cosf64 cosf64x cosh coshf coshf128 coshf32 coshf32x coshf64 coshf64x coshl cosl cospi cospif
cpu_set_t crossinterpdatafunc crypt ctermid ctime ctime_r cub cuda cuserid cusolver_int_t cuuint32_t
cuuint64_t cyl_bessel_i0 cyl_bessel_i0f cyl_bessel_i1 cyl_bessel_i1f dadd daddl daddr_t daemon
daylight dcgettext dcngettext ddivl descrgetfunc descrsetfunc destructor detail dev_t dfmal dgettext
difftime digit dim3 div div_t dmul dmull dngettext double1 double2 double2int double2ll double2uint
double2ull double3 double4 double4_16a double4_32a double_t dprintf drand48 drand48_data drand48_r
drem dremf dreml dsqrtl dsub dsubl dup dup2 dup3 duplocale dysize eaccess ecvt ecvt_r endusershell
environ erand48 erand48_r erf erfc erfcf erfcf128 erfcf32 erfcf32x erfcf64 erfcf64x erfcinv erfcinvf
erfcl erfcx erfcxf erff erff128 erff32 erff32x erff64 erff64x erfinv erfinvf erfl error_t euidaccess
execl execle execlp execv execve execveat execvp execvpe exit exp exp10 exp10f exp10f128 exp10f32
exp10f32x exp10f64 exp10f64x exp10l exp2 exp2f exp2f128 exp2f32 exp2f32x exp2f64 exp2f64x exp2l expf
expf128 expf32 expf32x expf64 expf64x expl explicit_bzero expm1 expm1f expm1f128 expm1f32 expm1f32x
expm1f64 expm1f64x expm1l f32addf128 f32addf32x f32addf64 f32addf64x f32divf128 f32divf32x f32divf64
f32divf64x f32fmaf128 f32fmaf32x f32fmaf64 f32fmaf64x f32mulf128 f32mulf32x f32mulf64 f32mulf64x
f32sqrtf128 f32sqrtf32x f32sqrtf64 f32sqrtf64x f32subf128 f32subf32x f32subf64 f32subf64x
f32xaddf128 f32xaddf64 f32xaddf64x f32xdivf128 f32xdivf64 f32xdivf64x f32xfmaf128 f32xfmaf64
f32xfmaf64x f32xmulf128 f32xmulf64 f32xmulf64x f32xsqrtf128 f32xsqrtf64 f32xsqrtf64x f32xsubf128
f32xsubf64 f32xsubf64x f64addf128 f64addf64x f64divf128 f64divf64x f64fmaf128 f64fmaf64x f64mulf128
f64mulf64x f64sqrtf128 f64sqrtf64x f64subf128 f64subf64x f64xaddf128 f64xdivf128 f64xfmaf128
f64xmulf128 f64xsqrtf128 f64xsubf128 fabs fabsf fabsf128 fabsf32 fabsf32x fabsf64 fabsf64x fabsl
faccessat fadd faddl fchdir fchmod fchmodat fchown fchownat fclose fcloseall fcvt fcvt_r fd_mask
fd_set fdatasync fdim fdimf fdimf128 fdimf32 fdimf32x fdimf64 fdimf64x fdiml fdiv fdivide fdividef
fdivl fdopen feof feof_unlocked ferror ferror_unlocked fexecve fflush fflush_unlocked ffma ffmal ffs
ffsl ffsll fgetc fgetc_unlocked fgetpos fgetpos64 fgets fgets_unlocked fgetwc fgetwc_unlocked fgetws
fgetws_unlocked fileno fileno_unlocked finite finitef finitel float1 float2 float2double float3
float4 float_t flockfile floor floorf floorf128 floorf32 floorf32x floorf64 floorf64x floorl fma
fmaf fmaf128 fmaf32 fmaf32x fmaf64 fmaf64x fmal fmax fmaxf fmaxf128 fmaxf32 fmaxf32x fmaxf64
fmaxf64x fmaximum fmaximum_mag fmaximum_mag_num fmaximum_mag_numf fmaximum_mag_numf128
fmaximum_mag_numf32 fmaximum_mag_numf32x fmaximum_mag_numf64 fmaximum_mag_numf64x fmaximum_mag_numl
fmaximum_magf fmaximum_magf128 fmaximum_magf32 fmaximum_magf32x fmaximum_magf64 fmaximum_magf64x
fmaximum_magl fmaximum_num fmaximum_numf fmaximum_numf128 fmaximum_numf32 fmaximum_numf32x
fmaximum_numf64 fmaximum_numf64x fmaximum_numl fmaximumf fmaximumf128 fmaximumf32 fmaximumf32x
fmaximumf64 fmaximumf64x fmaximuml fmaxl fmaxmag fmaxmagf fmaxmagf128 fmaxmagf32 fmaxmagf32x
fmaxmagf64 fmaxmagf64x fmaxmagl fmemopen fmin fminf fminf128 fminf32 fminf32x fminf64 fminf64x
fminimum fminimum_mag fminimum_mag_num fminimum_mag_numf fminimum_mag_numf128 fminimum_mag_numf32
fminimum_mag_numf32x fminimum_mag_numf64 fminimum_mag_numf64x fminimum_mag_numl fminimum_magf
fminimum_magf128 fminimum_magf32 fminimum_magf32x fminimum_magf64 fminimum_magf64x fminimum_magl
fminimum_num fminimum_numf fminimum_numf128 fminimum_numf32 fminimum_numf32x fminimum_numf64
fminimum_numf64x fminimum_numl fminimumf fminimumf128 fminimumf32 fminimumf32x fminimumf64
fminimumf64x fminimuml fminl fminmag fminmagf fminmagf128 fminmagf32 fminmagf32x fminmagf64
fminmagf64x fminmagl fmod fmodf fmodf128 fmodf32 fmodf32x fmodf64 fmodf64x fmodl fmul fmull fopen
fopen64 fopencookie fork fpathconf fpclassify fpos64_t fpos_t fprintf fputc fputc_unlocked fputs
fputs_unlocked fputwc fputwc_unlocked fputws fputws_unlocked fread fread_unlocked free freefunc
freelocale freopen freopen64 frexp frexpf frexpf128 frexpf32 frexpf32x frexpf64 frexpf64x frexpl
fromfp fromfpf fromfpf128 fromfpf32 fromfpf32x fromfpf64 fromfpf64x fromfpl fromfpx fromfpxf
fromfpxf128 fromfpxf32 fromfpxf32x fromfpxf64 fromfpxf64x fromfpxl fsblkcnt64_t fsblkcnt_t fscanf
fseek fseeko fseeko64 fsetpos fsetpos64 fsfilcnt64_t fsfilcnt_t fsid_t fsqrt fsqrtl fstat fstat64
fstatat fstatat64 fsub fsubl fsync ftell ftello ftello64 ftruncate ftruncate64 ftrylockfile
function_traits funlockfile futimens futimes futimesat fwide fwprintf fwrite fwrite_unlocked fwscanf
gamma gammaf gammal gcvt get_current_dir_name get_dtensor_class getattrfunc getattrofunc
getbufferproc getc getc_unlocked getchar getchar_unlocked getcpu getcwd getdate getdate_err
getdate_r getdelim getdomainname getdtablesize getegid getentropy getenv geteuid getgid getgroups
gethostid gethostname getiterfunc getitimer getline getloadavg getlogin getlogin_r getopt
getpagesize getpass getpayload getpayloadf getpayloadf128 getpayloadf32 getpayloadf32x getpayloadf64
getpayloadf64x getpayloadl getpgid getpgrp getpid getppid getpt getresgid getresuid getsid getsubopt
getter gettext gettid gettimeofday getuid getumask getusershell getw getwc getwc_unlocked getwchar
getwchar_unlocked getwd gid_t gmtime gmtime_r grantpt group_member h2ceil h2cos h2exp h2exp10 h2exp2
h2floor h2log h2log10 h2log2 h2rcp h2rint h2rsqrt h2sin h2sqrt h2tanh h2tanh_approx h2trunc half
half2 hashfunc hceil hcos hexp hexp10 hexp2 hfloor hlog hlog10 hlog2 hrcp hrint hrsqrt hsin hsqrt
htanh htanh_approx htrunc hypot hypotf hypotf128 hypotf32 hypotf32x hypotf64 hypotf64x hypotl id_t
ilogb ilogbf ilogbf128 ilogbf32 ilogbf32x ilogbf64 ilogbf64x ilogbl imaxabs imaxdiv imaxdiv_t index
initproc initstate initstate_r ino64_t ino_t inquiry int1 int16_t int2 int2double int3 int32_t int4
int64_t int8_t int_fast16_t int_fast32_t int_fast64_t int_fast8_t int_least16_t int_least32_t
int_least64_t int_least8_t intmax_t intptr_t invoke_traits isalnum isalpha isatty isblank
iscanonical iscntrl isctype isdigit iseqsig isfinite isgraph isgreater isgreaterequal isinf isinff
isinfl isless islessequal islessgreater islower isnan isnanf isnanl isnormal isprint ispunct
issignaling isspace isunordered isupper iswalnum iswalnum_l iswalpha iswalpha_l iswblank iswblank_l
iswcntrl iswcntrl_l iswctype iswctype_l iswdigit iswdigit_l iswgraph iswgraph_l iswlower iswlower_l
iswprint iswprint_l iswpunct iswpunct_l iswspace iswspace_l iswupper iswupper_l iswxdigit
iswxdigit_l isxdigit iszero iternextfunc itimerspec itimerval j0 j0f j0f128 j0f32 j0f32x j0f64
j0f64x j0l j1 j1f j1f128 j1f32 j1f32x j1f64 j1f64x j1l jn jnf jnf128 jnf32 jnf32x jnf64 jnf64x jnl
jrand48 jrand48_r key_t l64a labs lchmod lchown lcong48 lcong48_r lconv ldexp ldexpf ldexpf128
ldexpf32 ldexpf32x ldexpf64 ldexpf64x ldexpl ldiv ldiv_t lenfunc lgamma lgamma_r lgammaf lgammaf128
lgammaf128_r lgammaf32 lgammaf32_r lgammaf32x lgammaf32x_r lgammaf64 lgammaf64_r lgammaf64x
lgammaf64x_r lgammaf_r lgammal lgammal_r link linkat ll2double llabs lldiv lldiv_t llmax llmin llogb
llogbf llogbf128 llogbf32 llogbf32x llogbf64 llogbf64x llogbl llrint llrintf llrintf128 llrintf32
llrintf32x llrintf64 llrintf64x llrintl llround llroundf llroundf128 llroundf32 llroundf32x
llroundf64 llroundf64x llroundl locale_t localeconv localtime localtime_r lockf lockf64 loff_t log
log10 log10f log10f128 log10f32 log10f32x log10f64 log10f64x log10l log1p log1pf log1pf128 log1pf32
log1pf32x log1pf64 log1pf64x log1pl log2 log2f log2f128 log2f32 log2f32x log2f64 log2f64x log2l logb
logbf logbf128 logbf32 logbf32x logbf64 logbf64x logbl logf logf128 logf32 logf32x logf64 logf64x
logl long1 long2 long3 long4 long4_16a long4_32a longlong1 longlong2 longlong3 longlong4
longlong4_16a longlong4_32a lrand48 lrand48_r lrint lrintf lrintf128 lrintf32 lrintf32x lrintf64
lrintf64x lrintl lround lroundf lroundf128 lroundf32 lroundf32x lroundf64 lroundf64x lroundl lseek
lseek64 lstat lstat64 lutimes make_bfloat162 make_char1 make_char2 make_char3 make_char4
make_double1 make_double2 make_double3 make_double4 make_double4_16a make_double4_32a make_float1
make_float2 make_float3 make_float4 make_half2 make_int1 make_int2 make_int3 make_int4 make_long1
make_long2 make_long3 make_long4 make_long4_16a make_long4_32a make_longlong1 make_longlong2
make_longlong3 make_longlong4 make_longlong4_16a make_longlong4_32a make_short1 make_short2
make_short3 make_short4 make_uchar1 make_uchar2 make_uchar3 make_uchar4 make_uint1 make_uint2
make_uint3 make_uint4 make_ulong1 make_ulong2 make_ulong3 make_ulong4 make_ulong4_16a
make_ulong4_32a make_ulonglong1 make_ulonglong2 make_ulonglong3 make_ulonglong4 make_ulonglong4_16a
make_ulonglong4_32a make_ushort1 make_ushort2 make_ushort3 make_ushort4 malloc max max_align_t mblen
mbrlen mbrtowc mbsinit mbsnrtowcs mbsrtowcs mbstate_t mbstowcs mbtowc memccpy memchr memcmp memcpy
memfrob memmem memmove mempcpy memrchr memset min mkdir mkdirat mkdtemp mkfifo mkfifoat mknod
mknodat mkostemp mkostemp64 mkostemps mkostemps64 mkstemp mkstemp64 mkstemps mkstemps64 mktemp
mktime mode_t modf modff modff128 modff32 modff32x modff64 modff64x modfl mrand48 mrand48_r nan nanf
nanf128 nanf32 nanf32x nanf64 nanf64x nanl nanosleep nearbyint nearbyintf nearbyintf128 nearbyintf32
nearbyintf32x nearbyintf64 nearbyintf64x nearbyintl newfunc newlocale nextafter nextafterf
nextafterf128 nextafterf32 nextafterf32x nextafterf64 nextafterf64x nextafterl nextdown nextdownf
nextdownf128 nextdownf32 nextdownf32x nextdownf64 nextdownf64x nextdownl nexttoward nexttowardf
nexttowardl nextup nextupf nextupf128 nextupf32 nextupf32x nextupf64 nextupf64x nextupl ngettext
nice nlink_t norm norm3d norm3df norm4d norm4df normcdf normcdff normcdfinv normcdfinvf normf
nrand48 nrand48_r nullary_function_traits nullptr_t nv nv_bfloat16 nv_bfloat162 nv_half nv_half2
nvcuda objobjargproc objobjproc obstack obstack_printf obstack_vprintf off64_t off_t on_exit
open_memstream open_wmemstream optarg opterr optind optopt pathconf pause pclose perror pid_t pipe
pipe2 popen posix_memalign posix_openpt pow powf powf128 powf32 powf32x powf64 powf64x powl pread
pread64 printf printfunc profil program_invocation_name program_invocation_short_name pselect
pthread_atfork pthread_attr_destroy pthread_attr_getaffinity_np pthread_attr_getdetachstate
pthread_attr_getguardsize pthread_attr_getinheritsched pthread_attr_getschedparam
pthread_attr_getschedpolicy pthread_attr_getscope pthread_attr_getsigmask_np pthread_attr_getstack
pthread_attr_getstackaddr pthread_attr_getstacksize pthread_attr_init pthread_attr_setaffinity_np
pthread_attr_setdetachstate pthread_attr_setguardsize pthread_attr_setinheritsched
pthread_attr_setschedparam pthread_attr_setschedpolicy pthread_attr_setscope
pthread_attr_setsigmask_np pthread_attr_setstack pthread_attr_setstackaddr pthread_attr_setstacksize
pthread_attr_t pthread_barrier_destroy pthread_barrier_init pthread_barrier_t pthread_barrier_wait
pthread_barrierattr_destroy pthread_barrierattr_getpshared pthread_barrierattr_init
pthread_barrierattr_setpshared pthread_barrierattr_t pthread_cancel pthread_clockjoin_np
pthread_cond_broadcast pthread_cond_clockwait pthread_cond_destroy pthread_cond_init
pthread_cond_signal pthread_cond_t pthread_cond_timedwait pthread_cond_wait pthread_condattr_destroy
pthread_condattr_getclock pthread_condattr_getpshared pthread_condattr_init
pthread_condattr_setclock pthread_condattr_setpshared pthread_condattr_t pthread_create
pthread_detach pthread_equal pthread_exit pthread_getaffinity_np pthread_getattr_default_np
pthread_getattr_np pthread_getconcurrency pthread_getcpuclockid pthread_getname_np
pthread_getschedparam pthread_getspecific pthread_join pthread_key_create pthread_key_delete
pthread_key_t pthread_mutex_clocklock pthread_mutex_consistent pthread_mutex_consistent_np
pthread_mutex_destroy pthread_mutex_getprioceiling pthread_mutex_init pthread_mutex_lock
pthread_mutex_setprioceiling pthread_mutex_t pthread_mutex_timedlock pthread_mutex_trylock
pthread_mutex_unlock pthread_mutexattr_destroy pthread_mutexattr_getprioceiling
pthread_mutexattr_getprotocol pthread_mutexattr_getpshared pthread_mutexattr_getrobust
pthread_mutexattr_getrobust_np pthread_mutexattr_gettype pthread_mutexattr_init
pthread_mutexattr_setprioceiling pthread_mutexattr_setprotocol pthread_mutexattr_setpshared
pthread_mutexattr_setrobust pthread_mutexattr_setrobust_np pthread_mutexattr_settype
pthread_mutexattr_t pthread_once pthread_once_t pthread_rwlock_clockrdlock
pthread_rwlock_clockwrlock pthread_rwlock_destroy pthread_rwlock_init pthread_rwlock_rdlock
pthread_rwlock_t pthread_rwlock_timedrdlock pthread_rwlock_timedwrlock pthread_rwlock_tryrdlock
pthread_rwlock_trywrlock pthread_rwlock_unlock pthread_rwlock_wrlock pthread_rwlockattr_destroy
pthread_rwlockattr_getkind_np pthread_rwlockattr_getpshared pthread_rwlockattr_init
pthread_rwlockattr_setkind_np pthread_rwlockattr_setpshared pthread_rwlockattr_t pthread_self
pthread_setaffinity_np pthread_setattr_default_np pthread_setcancelstate pthread_setcanceltype
pthread_setconcurrency pthread_setname_np pthread_setschedparam pthread_setschedprio
pthread_setspecific pthread_spin_destroy pthread_spin_init pthread_spin_lock pthread_spin_trylock
pthread_spin_unlock pthread_spinlock_t pthread_t pthread_testcancel pthread_timedjoin_np
pthread_tryjoin_np pthread_yield ptrdiff_t ptsname ptsname_r putc putc_unlocked putchar
putchar_unlocked putenv puts putw putwc putwc_unlocked putwchar putwchar_unlocked pwrite pwrite64 py
pybind11 pyobj_list python_error qecvt qecvt_r qfcvt qfcvt_r qgcvt qsort qsort_r quad_t quick_exit
rand rand_r random random_data random_r rawmemchr rcbrt rcbrtf read readlink readlinkat realloc
reallocarray realpath register_t releasebufferproc remainder remainderf remainderf128 remainderf32
remainderf32x remainderf64 remainderf64x remainderl remove remquo remquof remquof128 remquof32
remquof32x remquof64 remquof64x remquol rename renameat renameat2 reprfunc revoke rewind rhypot
rhypotf richcmpfunc rindex rint rintf rintf128 rintf32 rintf32x rintf64 rintf64x rintl rmdir rnorm
rnorm3d rnorm3df rnorm4d rnorm4df rnormf round roundeven roundevenf roundevenf128 roundevenf32
roundevenf32x roundevenf64 roundevenf64x roundevenl roundf roundf128 roundf32 roundf32x roundf64
roundf64x roundl rpmatch rsqrt rsqrtf sbrk scalb scalbf scalbl scalbln scalblnf scalblnf128
scalblnf32 scalblnf32x scalblnf64 scalblnf64x scalblnl scalbn scalbnf scalbnf128 scalbnf32
scalbnf32x scalbnf64 scalbnf64x scalbnl scanf sched_get_priority_max sched_get_priority_min
sched_getaffinity sched_getcpu sched_getparam sched_getscheduler sched_param sched_rr_get_interval
sched_setaffinity sched_setparam sched_setscheduler sched_yield sdigit secure_getenv seed48 seed48_r
select sem_t sendfunc setattrfunc setattrofunc setbuf setbuffer setdomainname setegid setentry
setenv seteuid setgid sethostid sethostname setitimer setlinebuf setlocale setlogin setns setpayload
setpayloadf setpayloadf128 setpayloadf32 setpayloadf32x setpayloadf64 setpayloadf64x setpayloadl
setpayloadsig setpayloadsigf setpayloadsigf128 setpayloadsigf32 setpayloadsigf32x setpayloadsigf64
setpayloadsigf64x setpayloadsigl setpgid setpgrp setregid setresgid setresuid setreuid setsid
setstate setstate_r setter settimeofday setuid setusershell setvbuf short1 short2 short3 short4
sigabbrev_np sigdescr_np sigevent signbit signgam significand significandf significandl sigset_t sin
sincos sincosf sincosf128 sincosf32 sincosf32x sincosf64 sincosf64x sincosl sincospi sincospif sinf
sinf128 sinf32 sinf32x sinf64 sinf64x sinh sinhf sinhf128 sinhf32 sinhf32x sinhf64 sinhf64x sinhl
sinl sinpi sinpif size_t ska ska_ordered sleep snprintf socklen_t sprintf sqrt sqrtf sqrtf128
sqrtf32 sqrtf32x sqrtf64 sqrtf64x sqrtl srand srand48 srand48_r srandom srandom_r sscanf ssize_t
ssizeargfunc ssizeobjargproc ssizessizeargfunc ssizessizeobjargproc stat stat64 statx
statx_timestamp std stpcpy stpncpy strcasecmp strcasecmp_l strcasestr strcat strchr strchrnul strcmp
strcoll strcoll_l strcpy strcspn strdup strerror strerror_l strerror_r strerrordesc_np
strerrorname_np strfromd strfromf strfromf128 strfromf32 strfromf32x strfromf64 strfromf64x strfroml
strfry strftime strftime_l strlen strncasecmp strncasecmp_l strncat strncmp strncpy strndup strnlen
strong strpbrk strptime strptime_l strrchr strsep strsignal strspn strstr strtod strtod_l strtof
strtof128 strtof128_l strtof32 strtof32_l strtof32x strtof32x_l strtof64 strtof64_l strtof64x
strtof64x_l strtof_l strtoimax strtok strtok_r strtol strtol_l strtold strtold_l strtoll strtoll_l
strtoq strtoul strtoul_l strtoull strtoull_l strtoumax strtouq strverscmp strxfrm strxfrm_l
stwodigits suseconds_t swab swprintf swscanf symlink symlinkat sync syncfs syncthreads_and
syncthreads_count syncthreads_or syscall sysconf system tan tanf tanf128 tanf32 tanf32x tanf64
tanf64x tanh tanhf tanhf128 tanhf32 tanhf32x tanhf64 tanhf64x tanhl tanl tcgetpgrp tcsetpgrp tempnam
ternaryfunc textdomain tgamma tgammaf tgammaf128 tgammaf32 tgammaf32x tgammaf64 tgammaf64x tgammal
thrust time time_t timegm timelocal timer_create timer_delete timer_getoverrun timer_gettime
timer_settime timer_t timespec timespec_get timespec_getres timeval timex timezone tm tmpfile
tmpfile64 tmpnam tmpnam_r tolower tolower_l torch totalorder totalorderf totalorderf128
totalorderf32 totalorderf32x totalorderf64 totalorderf64x totalorderl totalordermag totalordermagf
totalordermagf128 totalordermagf32 totalordermagf32x totalordermagf64 totalordermagf64x
totalordermagl toupper toupper_l towctrans towctrans_l towlower towlower_l towupper towupper_l
traverseproc trunc truncate truncate64 truncf truncf128 truncf32 truncf32x truncf64 truncf64x truncl
ttyname ttyname_r ttyslot twodigits tzname tzset u_char u_int u_int16_t u_int32_t u_int64_t u_int8_t
u_long u_quad_t u_short ualarm uchar1 uchar2 uchar3 uchar4 ufromfp ufromfpf ufromfpf128 ufromfpf32
ufromfpf32x ufromfpf64 ufromfpf64x ufromfpl ufromfpx ufromfpxf ufromfpxf128 ufromfpxf32 ufromfpxf32x
ufromfpxf64 ufromfpxf64x ufromfpxl uid_t uint uint1 uint16_t uint2 uint2double uint3 uint32_t uint4
uint64_t uint8_t uint_fast16_t uint_fast32_t uint_fast64_t uint_fast8_t uint_least16_t
uint_least32_t uint_least64_t uint_least8_t uintmax_t uintptr_t ull2double ullmax ullmin ulong
ulong1 ulong2 ulong3 ulong4 ulong4_16a ulong4_32a ulonglong1 ulonglong2 ulonglong3 ulonglong4
ulonglong4_16a ulonglong4_32a umask umax umin unary_function_traits unaryfunc ungetc ungetwc unlink
unlinkat unlockpt unsetenv unshare useconds_t uselocale ushort ushort1 ushort2 ushort3 ushort4
usleep utimensat utimes va_list valloc vasprintf vdprintf vectorcallfunc vfork vfprintf vfscanf
vfwprintf vfwscanf vhangup visitproc vprintf vscanf vsnprintf vsprintf vsscanf vswprintf vswscanf
vwprintf vwscanf wcpcpy wcpncpy wcrtomb wcscasecmp wcscasecmp_l wcscat wcschr wcschrnul wcscmp
wcscoll wcscoll_l wcscpy wcscspn wcsdup wcsftime wcsftime_l wcslen wcsncasecmp wcsncasecmp_l wcsncat
wcsncmp wcsncpy wcsnlen wcsnrtombs wcspbrk wcsrchr wcsrtombs wcsspn wcsstr wcstod wcstod_l wcstof
wcstof128 wcstof128_l wcstof32 wcstof32_l wcstof32x wcstof32x_l wcstof64 wcstof64_l wcstof64x
wcstof64x_l wcstof_l wcstoimax wcstok wcstol wcstol_l wcstold wcstold_l wcstoll wcstoll_l wcstombs
wcstoq wcstoul wcstoul_l wcstoull wcstoull_l wcstoumax wcstouq wcswcs wcswidth wcsxfrm wcsxfrm_l
wctob wctomb wctrans wctrans_l wctrans_t wctype wctype_l wctype_t wcwidth wint_t wmemchr wmemcmp
wmemcpy wmemmove wmempcpy wmemset wprintf wrapperbase wrapperfunc wrapperfunc_kwds write wscanf y0
y0f y0f128 y0f32 y0f32x y0f64 y0f64x y0l y1 y1f y1f128 y1f32 y1f32x y1f64 y1f64x y1l yn ynf ynf128
ynf32 ynf32x ynf64 ynf64x ynl
""".split())
# END GENERATED NAMES


if __name__ == "__main__":
    sys.exit(main())
