"""Every name a generated project uses, and the names from outside the template it must not take.

The pre-generation hook reads the template's own names each time it runs; the names declared by
the C/C++/CUDA headers, the modules torch and the test tools import, and torch's op namespaces
cannot be read from the template, so the hook carries them as lists. This module finds all of
them on the installed toolchain; tests/test_name_collisions.py checks the hook against it, and

    python tests/template_names.py --write-hook     # add what this toolchain declares to the hook's lists

refreshes the lists (it only adds names: the lists are the union over every toolchain it ran on).
"""

from __future__ import annotations

import argparse
import ast
import importlib.metadata
import importlib.util
import keyword
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HOOK = ROOT / "hooks" / "pre_gen_project.py"
sys.path.insert(0, str(ROOT / "scripts"))

import bake  # noqa: E402


def load_hook():
    spec = importlib.util.spec_from_file_location("pre_gen_project", HOOK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hook = load_hook()
PROBE_OP, PROBE_PACKAGE = hook.PROBE_OP, hook.PROBE_PACKAGE
PROBE_CLASS = hook.class_name(PROBE_OP)
PROBES = (PROBE_OP, PROBE_CLASS, PROBE_PACKAGE)

# The projects whose names are enumerated: the defaults, and the other kernel and registration.
SAMPLES = {
    "elementwise-torch_library": {"kernel": "elementwise", "registration": "torch_library"},
    "rowwise-pybind11": {"kernel": "rowwise", "registration": "pybind11"},
}
# What the generated project and its tests import, directly or through torch.
DEPENDENCY_ROOTS = ("torch", "pytest", "hypothesis", "numpy", "setuptools", "wheel", "ninja")


def render_probe_projects(out: Path) -> dict[str, Path]:
    """The sample projects rendered with placeholder op and package names."""
    return {name: bake.render(options, out / name, project_slug="zz-probe-project", op_name=PROBE_OP,
                              package_name=PROBE_PACKAGE) for name, options in SAMPLES.items()}


def is_probe(name: str) -> bool:
    return any(probe in name for probe in PROBES)


# --- The template's own names -------------------------------------------------------------------


def python_names(source: str) -> set[str]:
    """Every identifier of a Python module: names, attributes, arguments, imports, definitions."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.alias):
            names.update(node.name.split("."))
            if node.asname:
                names.add(node.asname)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.update(node.module.split("."))
        elif isinstance(node, ast.keyword) and node.arg:
            names.add(node.arg)
    return names


CPP_STRIP = re.compile(r"""//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'""", re.S)
CPP_IDENTIFIER = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\b")


def cpp_names(source: str) -> set[str]:
    """Every identifier of a C++ source, preprocessor lines included, comments and strings not."""
    return set(CPP_IDENTIFIER.findall(CPP_STRIP.sub(" ", source)))


def template_names(project: Path) -> dict[str, set[str]]:
    """{identifier: the project files that use it}, for every name of the template (not the probes),
    and every file stem and folder name."""
    found: dict[str, set[str]] = {}
    for path in sorted(project.rglob("*")):
        relative = str(path.relative_to(project))
        names = {part.split(".")[0] for part in path.relative_to(project).parts}
        if path.suffix == ".py":
            names |= python_names(path.read_text())
        elif path.suffix in (".h", ".cpp", ".cu", ".cuh"):
            names |= cpp_names(path.read_text())
        for name in names:
            if name and not is_probe(name):
                found.setdefault(name, set()).add(relative)
    return found


def candidate_names(projects: dict[str, Path]) -> dict[str, set[str]]:
    """Template identifiers that pass the hook's spelling rules, and the op names whose derived
    names (the module class, ``<op>_reference``, ``<op>_fwd`` ...) would be template identifiers."""
    names: dict[str, set[str]] = {}
    for project in projects.values():
        for name, files in template_names(project).items():
            names.setdefault(name, set()).update(files)
    derived = {n for p in projects.values() for f in p.rglob("*") if f.is_file()
               for n in CPP_IDENTIFIER.findall(f"{f.relative_to(p)} {f.read_text(errors='replace')}") if is_probe(n)}
    # Invert each derived pattern: e.g. "zz_op_probe_reference" -> any template "<x>_reference",
    # "ZzOpProbe" (the class) -> any CamelCase template name.
    patterns = set()
    for name in derived:
        for probe in (PROBE_OP, PROBE_CLASS):
            if probe in name and (name != probe or probe == PROBE_CLASS):
                prefix, _, suffix = name.partition(probe)
                patterns.add((prefix, suffix, probe == PROBE_CLASS))
    for name, files in list(names.items()):
        for prefix, suffix, is_class in patterns:
            if name.startswith(prefix) and name.endswith(suffix) and len(name) > len(prefix) + len(suffix):
                middle = name[len(prefix):len(name) - len(suffix)]
                if is_class:
                    middle = re.sub(r"(?<!^)(?=[A-Z])", "_", middle).lower()
                    if hook.class_name(middle) != name[len(prefix):len(name) - len(suffix)]:
                        continue
                names.setdefault(middle, set()).update(files)
    return {n: f for n, f in names.items() if hook.check_identifier("op_name", n, "x") is None}


# --- Names from outside the template -------------------------------------------------------------


def compile_flags() -> list[str]:
    from torch.utils import cpp_extension

    includes = cpp_extension.include_paths(device_type="cuda") + [sysconfig.get_paths()["include"]]
    # The C++ standard torch builds extensions with.
    return [bake.torch_cxx_standard(), *(f"-I{p}" for p in includes), "-DTORCH_EXTENSION_NAME=_C", "-DTORCH_API_INCLUDE_EXTENSION_H"]


def nvcc_command() -> list[str] | None:
    from torch.utils import cpp_extension

    nvcc = shutil.which("nvcc") or str(Path(cpp_extension.CUDA_HOME or "/usr/local/cuda") / "bin" / "nvcc")
    if not Path(nvcc).exists():
        return None
    return [nvcc, *cpp_extension.COMMON_NVCC_FLAGS, "-gencode=arch=compute_90,code=sm_90",
            "-Xcudafe", "--error_limit=1000000"]


def angle_includes(projects: dict[str, Path]) -> list[str]:
    lines = {line.strip() for project in projects.values() for path in (project / "csrc").iterdir()
             for line in path.read_text().splitlines() if line.startswith("#include <")}
    return sorted(lines)


def _lowercase_tokens(preprocessed: str) -> set[str]:
    code = "\n".join(line for line in preprocessed.splitlines() if not line.startswith("#"))
    code = CPP_STRIP.sub(" ", code)
    return {t for t in re.findall(r"\b[a-z][a-z0-9_]*\b", code) if "__" not in t and len(t) <= hook.MAX_NAME_LENGTH}


def _probe(names: list[str], line: str, header: Path, suffix: str, command: list[str], work: Path) -> set[str]:
    """The names for which ``line`` (a declaration of ``{name}`` at global scope, one line each)
    after the headers does not compile."""
    source = work / f"probe{suffix}"
    body = [f'#include "{header}"'] + [line.format(name=n, i=i) for i, n in enumerate(names)]
    source.write_text("\n".join(body) + "\n")
    result = subprocess.run([*command, str(source)], capture_output=True, text=True, check=False)
    pattern = (r"^" + re.escape(str(source)) + r":(\d+):\d+: error" if suffix == ".cpp"
               else r"^" + re.escape(str(source)) + r"\((\d+)\): error")
    lines = [int(m.group(1)) for m in re.finditer(pattern, result.stderr, re.M)]
    if result.returncode != 0 and not lines:
        raise RuntimeError(f"the namespace probe failed without naming a line:\n{result.stderr[-3000:]}")
    stray = [n for n in lines if not 2 <= n < len(names) + 2]
    if stray:
        raise RuntimeError(f"the namespace probe failed outside its probe lines {stray[:5]}:\n{result.stderr[-3000:]}")
    return {names[n - 2] for n in lines}


def header_names(projects: dict[str, Path]) -> tuple[set[str], set[str]]:
    """(lowercase names declared at global scope, lowercase macros) of the headers the projects'
    C++ and CUDA sources include. Each lowercase token of the preprocessed headers is tried as the
    name of a namespace, with g++ and with nvcc (which fails for functions, variables and types of
    that name), and each token that follows ``namespace`` as the name of a variable (which fails
    for a namespace of that name: a package namespace would be merged into it)."""
    flags = compile_flags()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        header = work / "headers.h"
        header.write_text("\n".join(angle_includes(projects)) + "\n")
        compilers = [("g++", ".cpp", ["g++", *flags, "-x", "c++"], ["g++", *flags, "-fsyntax-only", "-fmax-errors=0"])]
        nvcc = nvcc_command()
        if nvcc:
            compilers.append(("nvcc", ".cu", [*nvcc, *flags, "-x", "cu"], [*nvcc, *flags, "-c", "-o", "/dev/null"]))
        tokens, macros, namespaces = set(), set(), set()
        for _, suffix, preprocess, _ in compilers:
            pre = subprocess.run([*preprocess, "-E", str(header)], capture_output=True, text=True, check=True).stdout
            tokens |= _lowercase_tokens(pre)
            namespaces |= set(re.findall(r"\bnamespace\s+([a-z][a-z0-9_]*)\b", pre))
            defines = subprocess.run([*preprocess, "-E", "-dM", str(header)] if suffix == ".cpp" else
                                     [*preprocess, "-E", "-Xcompiler", "-dM", str(header)],
                                     capture_output=True, text=True, check=True).stdout
            macros |= set(re.findall(r"^#define ([a-z][a-z0-9_]*)\b", defines, re.M))
        candidates = sorted(tokens - macros - hook.CPP_KEYWORDS - set(keyword.kwlist))
        namespaces = sorted(set(candidates) & namespaces)
        declared = set()
        for _, suffix, _, compile_command in compilers:
            declared |= _probe(candidates, "namespace {name} {{ int probe_member_{i}_; }}", header, suffix,
                               compile_command, work)
            declared |= _probe(namespaces, "int {name};", header, suffix, compile_command, work)
    return declared, macros


def dependency_modules() -> set[str]:
    """Top-level modules of the distributions the project and its tests need, and their requirements."""
    from packaging.requirements import Requirement

    by_distribution: dict[str, set[str]] = {}
    for module, distributions in importlib.metadata.packages_distributions().items():
        for distribution in distributions:
            by_distribution.setdefault(distribution.lower().replace("_", "-"), set()).add(module)
    seen, todo = set(), list(DEPENDENCY_ROOTS)
    while todo:
        name = todo.pop()
        key = name.lower().replace("_", "-")
        if key in seen:
            continue
        seen.add(key)
        try:
            requirements = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for text in requirements:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    modules = {m for d in seen for m in by_distribution.get(d, ())}
    return {m for m in modules if re.fullmatch(r"[a-z][a-z0-9_]*", m)}


def torch_namespaces() -> set[str]:
    """torch's op namespaces (after loading what torch.compile and the tests load) and torch.ops'
    own attributes: a package of one of these names cannot be torch.ops.<package>."""
    code = textwrap.dedent("""
        import torch, torch._dynamo, torch._inductor, torch.library, torch.testing._internal.optests  # noqa
        names = {n.split("::")[0] for n in torch._C._dispatch_get_all_op_names()}
        names |= set(dir(torch.ops)) | set(dir(type(torch.ops)))
        print(" ".join(sorted(names)))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return {n for n in out.split() if re.fullmatch(r"[a-z][a-z0-9_]*", n)}


# --- Writing the hook's lists --------------------------------------------------------------------


def _frozenset_source(name: str, values: set[str]) -> str:
    body = textwrap.fill(" ".join(sorted(values)), width=100, break_long_words=False, break_on_hyphens=False)
    return f'{name} = frozenset("""\n{body}\n""".split())\n'


def write_hook(lists: dict[str, set[str]]) -> None:
    text = HOOK.read_text()
    begin, end = "# BEGIN GENERATED NAMES\n", "# END GENERATED NAMES\n"
    head, rest = text.split(begin)
    _, tail = rest.split(end)
    body = "".join(_frozenset_source(name, values) for name, values in lists.items())
    HOOK.write_text(head + begin + body + end + tail)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write-hook", action="store_true", help="add the names found to the hook's lists")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        projects = render_probe_projects(Path(tmp))
        declared, macros = header_names(projects)
    valid = lambda names: {n for n in names if hook.check_identifier("package_name", n, "x") is None}  # noqa: E731
    lists = {
        "DEPENDENCY_MODULES": valid(dependency_modules()) | set(hook.DEPENDENCY_MODULES),
        "TORCH_NAMESPACES": valid(torch_namespaces()) | set(hook.TORCH_NAMESPACES),
        "CPP_MACROS": valid(macros) | set(hook.CPP_MACROS),
        "CPP_GLOBAL_NAMES": valid(declared) | set(hook.CPP_GLOBAL_NAMES),
    }
    for name, values in lists.items():
        print(f"{name}: {len(values)} names")
    if args.write_hook:
        write_hook(lists)
        print(f"wrote {HOOK.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
