"""op_name and package_name against every name a generated project uses.

Every identifier of the rendered default (elementwise, torch_library) and rowwise/pybind11
projects (Python through ast: names, attributes, arguments, imports, definitions; C++: every token
of csrc/), every file and folder name, and every op name whose derived names (the module class,
``<op>_reference``, ``<op>_fwd``, ...) would be one of them, is tried as op_name and as
package_name. The hook refuses it with a message that names another, valid choice, or the project
rendered with it keeps every name apart: the same files and folders, Python that compiles, and in
every scope of every module the same bindings (nothing merged with a template name, no global or
builtin hidden). Names the template cannot show (C/C++/CUDA header declarations and macros, the
modules torch and the test tools import, torch's op namespaces) are found on the installed
toolchain and must all be refused. A few of the accepted collisions are built and their own tests
run (GPU_COLLISION_PROJECTS: on a GPU machine nothing of theirs may skip).
"""

from __future__ import annotations

import json
import re
import symtable
import sys
from pathlib import Path

import bake
import pytest
import template_names as names

ROOT = Path(__file__).resolve().parents[1]
hook = names.hook
DEFAULTS = {key: (value[0] if isinstance(value, list) else value)
            for key, value in json.loads((ROOT / "cookiecutter.json").read_text()).items() if not key.startswith("_")}
DEFAULT_OPS = {"elementwise": "scaled_gelu", "rowwise": "scaled_softmax"}

# Accepted names that meet template names (inside the C++ namespace, as parameters, as methods)
# built for real; on a GPU machine these run every CUDA test as well.
GPU_COLLISION_PROJECTS = [
    # `scaled` is a function of the rowwise math inside the package's C++ namespace; `forward` is
    # the name of the autograd Function's method and of _registration's entry point.
    {"kernel": "rowwise", "registration": "pybind11", "float16": True, "bfloat16": True, "float64": True,
     "cpu_impl": True, "package_name": "scaled", "op_name": "forward"},
    # `apply` is a function of the elementwise kernels inside the namespace; `scale` is the op's
    # parameter, the module's attribute and the functor's member.
    {"kernel": "elementwise", "registration": "torch_library", "float16": True, "bfloat16": True,
     "float64": True, "cpu_impl": True, "package_name": "apply", "op_name": "scale"},
    # The package named after its op: one name as namespace, module, function and op prefix.
    {"kernel": "rowwise", "registration": "torch_library", "float16": False, "bfloat16": True,
     "float64": True, "cpu_impl": True, "package_name": "softmax", "op_name": "softmax"},
]


def answers(sample: str, **changes) -> dict:
    options = names.SAMPLES[sample]
    base = {**DEFAULTS, **options, "project_slug": "my-cuda-op", "package_name": "my_cuda_op",
            "op_name": DEFAULT_OPS[options["kernel"]], "description": "A custom CUDA operator for PyTorch."}
    return {**base, **changes}


@pytest.fixture(scope="module")
def probes(tmp_path_factory) -> dict[str, Path]:
    return names.render_probe_projects(tmp_path_factory.mktemp("probes"))


@pytest.fixture(scope="module")
def candidates(probes) -> dict[str, set[str]]:
    return names.candidate_names(probes)


# --- An independent check of one rendering: substitute the names, compare the bindings ---------


def renamer(op: str, package: str):
    pairs = {names.PROBE_OP: op, names.PROBE_CLASS: hook.class_name(op), names.PROBE_PACKAGE: package}
    pattern = re.compile("|".join(sorted(map(re.escape, pairs), key=len, reverse=True)))
    return lambda text: pattern.sub(lambda m: pairs[m.group()], text)


def bindings(source: str, filename: str, submodules: tuple[str, ...] = ()) -> list[dict[str, tuple]]:
    """Per scope (in a fixed order): {name: how it is bound and where a lookup of it lands}.

    ``from __future__`` imports are compiler directives, not bindings, and are left out (a later
    binding of the same name is harmless); a package's __init__ also holds its submodules, which
    are attributes of the package beside what __init__ binds."""
    source = re.sub(r"^from __future__ import .*$", "", source, flags=re.M)
    top = symtable.symtable(source, filename, "exec")
    module_bound = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported() or s.is_namespace()}
    module_bound |= set(submodules)
    result, stack = [], [top]
    while stack:
        table = stack.pop(0)
        stack[:0] = table.get_children()
        scope = {}
        for s in table.get_symbols():
            flags = (s.is_parameter(), s.is_global(), s.is_local(), s.is_free(), s.is_imported(), s.is_assigned(),
                     s.is_referenced(), s.is_namespace())
            if table is not top and s.is_global():
                flags += ("module" if s.get_name() in module_bound else "builtin",)
            scope[s.get_name()] = flags
        result.append(scope)
    result.append({name: ("attribute",) for name in module_bound})
    return result


def submodules_of(files: dict[str, str], path: str) -> tuple[str, ...]:
    if not path.endswith("/__init__.py"):
        return ()
    folder = path[: -len("/__init__.py")]
    return tuple(p[len(folder) + 1:].split("/")[0].removesuffix(".py") for p in files
                 if p.startswith(folder + "/") and p != path and p.endswith(".py"))


class Rendering:
    """A probe project's files, and the bindings of its Python modules."""

    def __init__(self, project: Path):
        self.files = {str(p.relative_to(project)): p.read_text() for p in sorted(project.rglob("*")) if p.is_file()}
        self.bindings = {path: bindings(text, path, submodules_of(self.files, path))
                         for path, text in self.files.items() if path.endswith(".py")}

    def problems_with(self, op: str, package: str) -> list[str]:
        """What goes wrong when the op and package are named so (empty when every name is kept apart)."""
        rename = renamer(op, package)
        problems = []
        new_paths = {path: rename(path) for path in self.files}
        if len({p.lower() for p in new_paths.values()}) != len(new_paths):
            problems.append("two files land on one path")
        folders: dict[str, set[str]] = {}
        for old, new in new_paths.items():
            old_parts, new_parts = old.split("/"), new.split("/")
            for depth in range(1, len(new_parts)):
                folders.setdefault("/".join(new_parts[:depth]), set()).add("/".join(old_parts[:depth]))
        problems += [f"two folders land on {folder}/" for folder, olds in folders.items() if len(olds) > 1]
        # The package must be what `import <package>` finds from every folder Python runs from.
        package_folders = {p.rsplit("/", 1)[0] for p in new_paths.values() if p.endswith("/__init__.py")}
        for new in new_paths.values():
            folder, _, name = new.rpartition("/")
            if name == f"{package}.py" and folder not in package_folders:
                problems.append(f"{new} would be imported as the package")
        new_files = {new_paths[p]: rename(text) for p, text in self.files.items()}
        for old, text in self.files.items():
            if not old.endswith(".py"):
                continue
            new = new_paths[old]
            try:
                compile(new_files[new], new, "exec")
            except SyntaxError as error:
                problems.append(f"{new} does not compile: {error}")
                continue
            expected = [{rename(name): flags for name, flags in scope.items()} for scope in self.bindings[old]]
            actual = bindings(new_files[new], new, submodules_of(new_files, new))
            for before, scope_old, scope_new in zip(self.bindings[old], expected, actual):
                if len(scope_old) != len(before) or scope_old != scope_new:
                    merged = sorted(set(scope_new) ^ set(scope_old) | {n for n in scope_new if scope_new[n] !=
                                                                        scope_old.get(n)})
                    problems.append(f"{new}: the bindings of {merged or sorted(scope_new)[:5]} change")
                    break
        return problems


@pytest.fixture(scope="module")
def renderings(probes) -> dict[str, Rendering]:
    return {sample: Rendering(project) for sample, project in probes.items()}


def test_the_enumeration_finds_the_template_names(candidates):
    # A few names of each kind, to show the enumeration sees them: locals and parameters, imports,
    # module and file names, C++ helpers inside the namespace and outside it, and op names whose
    # derived names are template names (the class PackageNotFoundError, the file test_soak.py).
    expected = {"x", "self", "scale", "version", "support", "registration", "gradcheck", "scaled", "py",
                "package_not_found_error", "soak", "check", "module", "benchmark", "torch", "apply", "m"}
    assert expected <= set(candidates), expected - set(candidates)
    assert len(candidates) > 200


@pytest.mark.parametrize("sample", list(names.SAMPLES))
@pytest.mark.parametrize("key", ["op_name", "package_name"])
def test_each_template_name_is_refused_or_kept_apart(renderings, candidates, sample, key):
    rendering = renderings[sample]
    base = answers(sample)
    refused, failures = [], []
    for name in sorted(candidates):
        errors = hook.validate({**base, key: name})
        assert all(e.startswith(f"ERROR: {key}: ") for e in errors), (name, errors)
        if errors:
            refused.append(name)
            message = errors[0]
            suggestion = re.search(r"e\.g\. (\w+)$", message)
            assert suggestion, f"{name}: the message names nothing to type instead: {message}"
            assert hook.validate({**base, key: suggestion.group(1)}) == [], (name, message)
            continue
        op = name if key == "op_name" else base["op_name"]
        package = name if key == "package_name" else base["package_name"]
        failures += [f"{key}={name}: {problem}" for problem in rendering.problems_with(op, package)]
    assert not failures, "\n".join(failures)
    print(f"\n{sample} {key}: {len(refused)} of {len(candidates)} template names refused: {' '.join(refused)}")
    assert refused and len(refused) < len(candidates)


@pytest.mark.parametrize("key, name, reason", [
    ("op_name", "x", "modules.py already uses in forward()"),
    ("op_name", "self", "modules.py already uses in forward()"),
    ("op_name", "version", "__init__.py already uses at module level"),
    ("op_name", "package_not_found_error", "makes the name 'PackageNotFoundError'"),
    ("op_name", "registration", "csrc/registration.cpp"),
    ("op_name", "gradcheck", "tests/test_gradcheck.py"),
    ("op_name", "value_error", "builtin"),
    ("package_name", "support", "tests/support.py"),
    ("package_name", "benchmark", "benchmarks/benchmark.py"),
    ("package_name", "csrc", "csrc/"),
    ("package_name", "op", "tests/support.py"),
    ("package_name", "module", "test_module_matches_function()"),
    ("package_name", "scaled_gelu_reference", "benchmarks/benchmark.py"),
    ("package_name", "m", "outside the package's C++ namespace"),
    ("package_name", "norm", "declared at global scope"),
    ("package_name", "dim3", "declared at global scope"),
    ("package_name", "thrust", "declared at global scope"),
    ("package_name", "stdin", "macro"),
    ("package_name", "aten", "torch.library namespace"),
    ("package_name", "sympy", "shadow"),
    ("package_name", "sum", "builtin"),
])
def test_refusals_say_why_and_what_to_type(key, name, reason):
    errors = hook.validate(answers("elementwise-torch_library", **{key: name}))
    assert len(errors) == 1 and errors[0].startswith(f"ERROR: {key}: {name!r}"), errors
    assert reason in errors[0], errors[0]
    assert re.search(r"choose another name, e\.g\. \w+$", errors[0]), errors[0]


def test_package_named_after_the_op(probes, renderings):
    """package_name against the op's own derived names (<op>_reference, <op>_fwd, ...) and the op's name."""
    derived = {n for p in probes.values() for f in p.rglob("*") if f.is_file()
               for n in names.CPP_IDENTIFIER.findall(f"{f.relative_to(p)} {f.read_text()}") if names.PROBE_OP in n}
    assert {names.PROBE_OP, f"{names.PROBE_OP}_reference", f"{names.PROBE_OP}_fwd"} <= derived
    failures = []
    for sample, rendering in renderings.items():
        for name in sorted(derived):
            package = name.replace(names.PROBE_OP, "foo")
            if hook.check_identifier("package_name", package, "x") is None and not hook.validate(
                    answers(sample, op_name="foo", package_name=package)):
                failures += [f"{sample} {package}: {p}" for p in rendering.problems_with("foo", package)]
    assert not failures, "\n".join(failures)
    assert hook.validate(answers("elementwise-torch_library", op_name="foo", package_name="foo")) == []
    assert hook.validate(answers("elementwise-torch_library", op_name="foo", package_name="foo_reference"))
    # `using namespace foo_fwd;` then `&foo_fwd`: the namespace and the function are ambiguous.
    assert hook.validate(answers("rowwise-pybind11", op_name="foo", package_name="foo_fwd"))


def test_names_outside_the_namespace_depend_on_the_registration():
    # pybind11's registration.cpp calls py::arg(...) beside the package's namespace; torch_library's does not.
    assert "outside the package's C++ namespace" in hook.validate(answers("rowwise-pybind11", package_name="arg"))[0]
    assert hook.validate(answers("elementwise-torch_library", package_name="arg")) == []


@pytest.mark.parametrize("sample, op, package", [
    ("rowwise-pybind11", "forward", "combine"), ("elementwise-torch_library", "scale", "apply"),
    ("rowwise-pybind11", "softmax", "softmax"),
])
def test_substitution_is_what_cookiecutter_renders(tmp_path, renderings, sample, op, package):
    """The checks above substitute names into a probe rendering; cookiecutter renders the same."""
    real = bake.render(names.SAMPLES[sample], tmp_path, project_slug="zz-probe-project", op_name=op,
                       package_name=package)
    rename = renamer(op, package)
    expected = {rename(path): rename(text) for path, text in renderings[sample].files.items()}
    actual = {str(p.relative_to(real)): p.read_text() for p in real.rglob("*") if p.is_file()}
    assert actual == expected


def test_dependency_modules_and_torch_namespaces_are_refused():
    modules = names.dependency_modules() | set(sys.stdlib_module_names)
    namespaces = names.torch_namespaces()
    assert {"torch", "sympy", "pytest", "hypothesis", "numpy"} <= modules and {"aten", "prims"} <= namespaces
    base = answers("elementwise-torch_library")
    accepted = [n for n in sorted(modules | namespaces) if hook.check_identifier("package_name", n, "x") is None
                and not hook.validate({**base, "package_name": n})]
    assert not accepted, f"add these with `python tests/template_names.py --write-hook`: {accepted}"


def test_cpp_header_names_are_refused(probes):
    """Every lowercase name the included headers declare at global scope or define as a macro."""
    declared, macros = names.header_names(probes)
    assert {"norm", "max", "exp", "printf", "dim3", "float4", "int64_t"} <= declared, "the probe found too little"
    assert {"errno", "assert", "stdout"} <= macros
    base = answers("elementwise-torch_library")
    accepted = [n for n in sorted(declared | macros) if hook.check_identifier("package_name", n, "x") is None
                and not hook.validate({**base, "package_name": n})]
    assert not accepted, f"add these with `python tests/template_names.py --write-hook`: {accepted}"
    # The op's C++ names (<op>_fwd, <op>_bwd_cuda, ...) must not be header names either.
    suffixes = {n[len(names.PROBE_OP):] for p in probes.values() for f in (p / "csrc").iterdir()
                for n in names.cpp_names(f.read_text()) if n.startswith(names.PROBE_OP + "_")}
    for header_name in sorted(declared | macros):
        for suffix in suffixes:
            op = header_name.removesuffix(suffix)
            if op != header_name and hook.check_identifier("op_name", op, "x") is None:
                assert hook.validate({**base, "op_name": op}), f"op_name {op} makes the header name {header_name}"


@pytest.mark.parametrize("project", GPU_COLLISION_PROJECTS, ids=lambda p: f"{p['package_name']}.{p['op_name']}")
def test_accepted_collision_builds_and_passes_its_tests(tmp_path, project):
    import torch

    options = {k: v for k, v in project.items() if k in bake.MATRIX}
    package, op = project["package_name"], project["op_name"]
    assert hook.validate({**DEFAULTS, **options, "project_slug": "collision-op", "package_name": package,
                          "op_name": op, "description": "A custom CUDA operator."}) == []
    root = bake.render(options, tmp_path, project_slug="collision-op", package_name=package, op_name=op)
    build = bake.build(root, bake.build_env(arch_list="9.0", jobs=2), tmp_path / "build.log")
    assert build.returncode == 0, (tmp_path / "build.log").read_text()[-5000:]
    counts = bake.run_tests(root, tmp_path / "test.log")
    log = (tmp_path / "test.log").read_text()
    assert counts.failed == 0 and counts.passed > 0, log[-5000:]
    if torch.cuda.is_available():
        assert counts.unexpected_skips() == 0, log[-5000:]
