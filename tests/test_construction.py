"""No answer the hook accepts can collide with a name of the generated code, by construction.

- C++ and torch.library: every name lives in the namespace ``cuop_<package_name>``; no name the
  included headers declare, no macro they define and no op namespace of torch starts with
  ``cuop_``, checked here against the preprocessed headers of every combination and the installed
  torch. Packages named like C library functions, macros, CUDA types and torch's own namespaces
  render and compile (nvcc and g++).
- Python: in the package's modules the template's own names beside the answers' are private,
  submodules or modules the hook refuses as names; tests/ and benchmarks/ bind neither answer
  (``import <package_name> as package``, ``op = package.<op_name>``).
- Files: a path named after the op or the package can meet a path of the template only for a name
  the hook refuses.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import bake
import pytest
from test_compile import command
from test_hooks import GOOD, pre_gen

ROOT = Path(__file__).resolve().parents[1]
PREFIX = "cuop_"
IDENT = re.compile(r"\b[A-Za-z_]\w*")
SYSTEM_INCLUDE = re.compile(r"^#include <([^>]+)>", re.M)
# Placeholder answers: every name that contains one of them was made from an answer.
PROBE_PACKAGE, PROBE_OP = "zzpkg", "zzop"
PROBE_CLASS = pre_gen.class_name(PROBE_OP)
# Packages named like a C library function, a C macro and torch's C++ namespaces, with op names that
# meet the template's own file and C++ names (registration.cpp, dispatch_forward, launch_*, the
# kernels' parameter x): each renders and compiles, one project per starter kernel and registration.
ADVERSARIAL = [
    ({"kernel": "elementwise", "registration": "torch_library", "torch_abi": "stable", "cpu_impl": "yes"},
     {"package_name": "printf", "op_name": "registration"}),
    ({"kernel": "rowwise", "registration": "pybind11", "torch_abi": "versioned", "cpu_impl": "yes"},
     {"package_name": "stdin", "op_name": "x"}),
    ({"kernel": "rowwise", "registration": "torch_library", "torch_abi": "versioned", "cpu_impl": "no"},
     {"package_name": "at", "op_name": "dispatch"}),
    ({"kernel": "elementwise", "registration": "pybind11", "torch_abi": "versioned", "cpu_impl": "no"},
     {"package_name": "c10", "op_name": "launch"}),
]
# More names the hook accepts: torch's op namespaces (aten, prims) and attributes of torch.ops
# (load_library), CUDA types (dim3, half), C library names (malloc, errno_t), CUDA's C++ namespaces
# (cub, thrust) and names that were op namespaces of torch with a suffix (debug_mode + _ops).
ACCEPTED = ["aten", "prims", "load_library", "dim3", "half", "malloc", "errno_t", "cub", "thrust", "debug_mode",
            "std", "torch_ops", "cuda_malloc", "version", "forward", "gradcheck", "ddp", "support_op"]


def test_the_namespace_is_the_prefix_and_the_package():
    context = json.loads((ROOT / "cookiecutter.json").read_text())
    assert context["__ns"] == PREFIX + "{{ cookiecutter.package_name }}"


@pytest.fixture(scope="module")
def probes(tmp_path_factory) -> list[Path]:
    out = tmp_path_factory.mktemp("probes")
    return [bake.render(options, out / bake.combo_id(options), package_name=PROBE_PACKAGE, op_name=PROBE_OP)
            for options in bake.combinations()
            if options["float16"] and options["bfloat16"] and options["float64"]]


def preprocessed_identifiers(source: str, suffix: str, tmp_path: Path) -> set[str]:
    path = tmp_path / f"headers{suffix}"
    path.write_text(source)
    options = {"registration": "pybind11"}
    cmd = command(path, options, tmp_path / "unused.o")
    cmd = [c for c in cmd if c not in ("-c", "-fsyntax-only") and not c.endswith(".o") and c != "-o"]
    result = subprocess.run([*cmd, "-E", "-dD"] if suffix == ".cpp" else [*cmd, "-E", "-Xcompiler", "-dD"],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    return set(IDENT.findall(result.stdout))


def test_no_header_name_and_no_torch_namespace_starts_with_the_prefix(rendered_matrix, tmp_path):
    """Every system header any combination includes, preprocessed as g++ (.cpp) and nvcc (.cu) see it."""
    headers = {".cpp": set(), ".cu": set()}
    for _, project in rendered_matrix.values():
        for source in (p for p in (project / "csrc").rglob("*") if p.is_file()):
            kind = ".cu" if source.suffix in (".cu", ".cuh") else ".cpp"
            headers[kind] |= set(SYSTEM_INCLUDE.findall(source.read_text()))
    headers[".cu"] |= headers[".cpp"] | {"cuda_runtime.h", "cuda_fp16.h", "cuda_bf16.h"}
    assert "torch/library.h" in headers[".cpp"] and "cooperative_groups.h" in headers[".cu"]

    def names(kind: str) -> set[str]:
        lines = "".join(f"#include <{h}>\n" for h in sorted(headers[kind]))
        return preprocessed_identifiers("#include <Python.h>\n" + lines, kind, tmp_path)

    with ThreadPoolExecutor(2) as pool:
        identifiers = set().union(*pool.map(names, headers))
    assert len(identifiers) > 10000, "the headers were not read"
    assert "printf" in identifiers and "stdin" in identifiers and "cudaMalloc" in identifiers
    assert not {n for n in identifiers if n.startswith(PREFIX)}

    import torch

    namespaces = {schema.name.split("::")[0] for schema in torch._C._jit_get_all_schemas()}
    assert {"aten", "prims"} <= namespaces
    assert not {n for n in namespaces | set(dir(torch.ops)) if n.startswith(PREFIX)}


@pytest.mark.parametrize("options, names", ADVERSARIAL, ids=[n["package_name"] for _, n in ADVERSARIAL])
def test_hook_accepts_the_adversarial_names(options, names):
    assert pre_gen.validate({**GOOD, **options, **names}) == []


@pytest.mark.parametrize("name", ACCEPTED)
def test_hook_accepts_names_of_libraries_and_of_the_template(name):
    assert pre_gen.validate({**GOOD, "package_name": name, "op_name": name}) == []


@pytest.mark.template_change
def test_adversarial_names_render_and_compile(tmp_path):
    """Each distinct source of the adversarial projects compiles: nvcc for .cu, g++ for .cpp."""
    units = []
    for options, names in ADVERSARIAL:
        project = bake.render(options, tmp_path / names["package_name"], **names)
        header = next(p for p in (project / "csrc").rglob(f"{names['op_name']}.h"))
        assert f"namespace {PREFIX}{names['package_name']}" in header.read_text()
        units += [(s, options) for s in sorted((project / "csrc").rglob("*")) if s.suffix in (".cpp", ".cu")]

    def compile_one(unit):
        source, options = unit
        result = subprocess.run(command(source, options, source.with_suffix(".o")), capture_output=True, text=True)
        return source, result

    with ThreadPoolExecutor(2) as pool:
        failures = [f"{s}:\n{r.stderr[-3000:]}" for s, r in pool.map(compile_one, units) if r.returncode]
    assert not failures, "\n\n".join(failures)


def bindings(path: Path) -> dict[str, set[str]]:
    """{scope: names bound there} for a Python file: the module and every function and class."""
    tree = ast.parse(path.read_text())
    scopes: dict[str, set[str]] = {}

    def visit(node, scope: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                scopes.setdefault(scope, set()).add(child.name)
                inner = f"{scope}.{child.name}"
                if not isinstance(child, ast.ClassDef):
                    scopes.setdefault(inner, set()).update(a.arg for a in ast.walk(child.args) if isinstance(a, ast.arg))
                visit(child, inner)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                scopes.setdefault(scope, set()).update((a.asname or a.name).split(".")[0] for a in child.names)
            elif isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                scopes.setdefault(scope, set()).add(child.id)
            elif isinstance(child, ast.ExceptHandler) and child.name:
                scopes.setdefault(scope, set()).add(child.name)
            visit(child, scope)

    visit(tree, "<module>")
    return scopes


def made_from_answers(name: str) -> bool:
    return PROBE_PACKAGE in name or PROBE_OP in name or PROBE_CLASS in name


def form(name: str) -> re.Pattern:
    """Every name the template makes as it made ``name``: the probes replaced by any accepted spelling."""
    pattern = re.escape(name).replace(PROBE_CLASS, "(?P<cls>[A-Z][A-Za-z0-9]*)")
    return re.compile(pattern.replace(PROBE_PACKAGE, "(?P<pkg>[a-z][a-z0-9_]*)").replace(PROBE_OP, "(?P<op>[a-z][a-z0-9_]*)"))


def refused(match: re.Match) -> bool:
    """Whether the hook refuses every answer that would make the matched name."""
    found = match.groupdict()
    if found.get("cls"):
        return False  # a class name made from the op: no template name may take that form
    if found.get("op"):
        return bool(pre_gen.check_op(found["op"]))
    return bool(pre_gen.check_package(found["pkg"]))


def test_python_scopes_keep_the_answers_apart(probes):
    """Outside the package no scope binds a name made from an answer; inside it, no template name
    beside one has a form an accepted answer makes. (A __future__ import is a compiler directive:
    its binding is never read, and a def of that name replaces it.)"""
    public: set[str] = set()
    for project in probes:
        package = project / PROBE_PACKAGE
        submodules = {p.stem for p in package.iterdir() if p.suffix == ".py" or p.is_dir() and p.name != "__pycache__"}
        public.update(m for m in submodules if not m.startswith("_") and m != "__init__")
        for path in sorted(project.rglob("*.py")):
            for scope, names in bindings(path).items():
                answers = {n for n in names if made_from_answers(n)}
                where = f"{path.relative_to(project)} {scope}"
                inside = path.parent == package or path.parent.parent == package
                assert inside or not answers, f"{where} binds a name made from an answer: {answers}"
                for made in answers:
                    for other in names - answers - {"annotations"}:
                        match = form(made).fullmatch(other)
                        assert not match or refused(match), f"{where}: {made} would be {other}, an accepted answer"
    assert public == pre_gen.PACKAGE_MODULES, "the hook's PACKAGE_MODULES must be the package's public submodules"


CPP_NOISE = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\])*"', re.S)  # comments and string literals


def test_cpp_names_made_from_answers_meet_no_template_name(probes):
    """In C++ code (comments and strings aside) neither answer is a name by itself, and no name the
    template declares or uses has the form of one made from an answer (cuop_<package>, <op>_fwd, ...)."""
    for project in probes:
        sources = sorted(p for p in (project / "csrc").rglob("*") if p.is_file())
        made_somewhere = False
        for source in sources:
            tokens = set(IDENT.findall(CPP_NOISE.sub(" ", source.read_text())))
            assert not tokens & {PROBE_PACKAGE, PROBE_OP, PROBE_CLASS}, source.name
            answers = {t for t in tokens if made_from_answers(t)}
            made_somewhere = made_somewhere or bool(answers)
            for made in answers:
                for other in tokens - answers:
                    match = form(made).fullmatch(other)
                    assert not match or refused(match), f"{source.name}: {made} would be {other}"
        assert made_somewhere, "no C++ name was made from the answers: the probes did not reach the sources"


def test_file_names_made_from_answers_meet_the_template_only_for_refused_names(probes):
    for project in probes:
        paths = [p.relative_to(project).as_posix() for p in project.rglob("*") if p.is_file()]
        fixed = [p for p in paths if not made_from_answers(p)]
        for path in filter(made_from_answers, paths):
            for other in fixed:
                match = form(path).fullmatch(other)
                assert not match or refused(match), f"{other} is {path} for an accepted answer"


def test_modules_beside_the_package_are_refused_as_package_names(probes):
    """The project's own modules and folders, and every module its code imports, but the stdlib's."""
    for project in probes:
        own = {p.stem for p in project.iterdir() if p.suffix == ".py" or p.is_dir() and not p.name.startswith(".")}
        own |= {p.stem for folder in ("tests", "benchmarks") for p in (project / folder).glob("*.py")}
        imported = set()
        for path in project.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    imported |= {a.name.split(".")[0] for a in node.names}
                elif isinstance(node, ast.ImportFrom) and node.level == 0:
                    imported.add(node.module.split(".")[0])
        # A name the hook refuses by its spelling (op-seeds/) is no package name, so it shadows nothing.
        names = {m for m in own | imported if not pre_gen.check_identifier(m, "my_package")}
        accepted = {m for m in names - {PROBE_PACKAGE, "__future__"} if not pre_gen.check_package(m)}
        assert not accepted, f"the hook accepts these as package names, which would shadow a module: {accepted}"


def test_torch_requirements_are_refused_as_package_names():
    """What torch imports: the top-level modules of the distributions it requires."""
    import importlib.metadata as metadata

    modules = set()
    for requirement in metadata.requires("torch") or []:
        name = re.match(r"[A-Za-z0-9_.-]+", requirement)[0]
        if "extra ==" in requirement:
            continue
        try:
            files = metadata.distribution(name).files or []
        except metadata.PackageNotFoundError:
            continue
        modules |= {f.parts[0].removesuffix(".py") for f in files
                    if not f.parts[0].endswith((".dist-info", ".data", ".pth")) and f.parts[0] not in ("..", "__pycache__")}
    assert {"sympy", "networkx", "triton"} <= modules
    assert not {m for m in modules if re.fullmatch(r"[a-z][a-z0-9_]*", m) and not pre_gen.check_package(m)}
