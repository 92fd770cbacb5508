"""Preflight and audits for {{cookiecutter.package_name}}: reports torch and its CUDA version, nvcc,
ninja, the GPU and its architecture, and the built extension (the architectures inside it), and
names the fix for each problem; audits what the built extension holds.

    python doctor.py          # before `pip install --no-build-isolation -e .`, or when an import fails
    python doctor.py archs    # audit: machine code (SASS) for each architecture of the list, PTX where it says +PTX
    python doctor.py abi      # audit: the libtorch C++ symbols the extension needs from the torch it runs with

Exit status 1 when something would stop the build or the op, or an audit fails (FAIL lines), 0
otherwise (warn lines do not stop a build: no GPU, for example, only skips the CUDA tests). It never
imports the package itself, so it runs when the extension is missing or broken; it loads the built
extension in a separate process.

`archs` checks the list given with --arch-list, else TORCH_CUDA_ARCH_LIST, else setup.py's
DEFAULT_ARCH_LIST (what a build on a machine without a GPU targets). It reads the library with
cuobjdump: the CUDA Toolkit's, or the one in PyPI's nvidia-cuda-cuobjdump package. `abi` lists the
extension's undefined C++ symbols of c10::, at:: and torch:: (nm -D, demangled); --expect-none
fails when there is any, for a build that must not depend on libtorch's C++ ABI.
{%- if cookiecutter.__stable == 'True' %} This project
builds against the LibTorch stable ABI, so `abi` expects none, and checks that the torch it runs with
defines every symbol of torch's C shim the extension calls: run it with the floor torch (setup.py's
OLDEST_TORCH) to check that one wheel loads into every torch from there on.
{%- endif %}
"""

from __future__ import annotations

import argparse
import ast
import glob
import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import sys

PACKAGE = "{{cookiecutter.package_name}}"
DISTRIBUTION = "{{cookiecutter.project_slug}}"
HERE = os.path.dirname(os.path.abspath(__file__))
REBUILD = "pip install --no-build-isolation -e ."
# Built against the LibTorch stable ABI (setup.py's STABLE_ABI): no libtorch C++ symbol is expected.
STABLE_ABI = {{cookiecutter.__stable}}
GET_CUOBJDUMP = (
    "pip install nvidia-cuda-cuobjdump (cuobjdump from PyPI, found inside the installed package), "
    "or install the CUDA Toolkit's cuobjdump and put it on PATH or in $CUDA_HOME/bin"
)


class Report:
    def __init__(self) -> None:
        self.failed = False

    def ok(self, what: str) -> None:
        print(f"ok    {what}")

    def info(self, what: str) -> None:
        print(f"info  {what}")

    def warn(self, what: str, fix: str) -> None:
        print(f"warn  {what}\n      -> {fix}")

    def fail(self, what: str, fix: str) -> None:
        self.failed = True
        print(f"FAIL  {what}\n      -> {fix}")


# Architectures: TORCH_CUDA_ARCH_LIST entries, and the names cuobjdump reports.


def parse_arch_list(text: str) -> list[tuple[int, int, str, bool]]:
    """TORCH_CUDA_ARCH_LIST ("8.0;9.0+PTX", "8.6 9.0a") as (major, minor, suffix, with PTX) entries."""
    entries = []
    for item in re.split(r"[;\s,]+", text.strip()):
        match = re.fullmatch(r"(\d+)\.(\d+)([af]?)(\+PTX)?", item)
        if match:
            entries.append((int(match[1]), int(match[2]), match[3], bool(match[4])))
    return entries


def arch_targets(text: str) -> tuple[list[tuple[str, str, str | None]], list[str]]:
    """What a TORCH_CUDA_ARCH_LIST asks nvcc for: (entry, SASS name, PTX name or None) for each entry,
    ("9.0a+PTX", "sm_90a", "compute_90a"), and the entries that are not numbers ("Hopper")."""
    targets, unread = [], []
    for item in re.split(r"[;\s,]+", text.strip()):
        match = re.fullmatch(r"(\d+)\.(\d+)([af]?)(\+PTX)?", item)
        if match:
            code = f"{match[1]}{match[2]}{match[3]}"
            targets.append((item, f"sm_{code}", f"compute_{code}" if match[4] else None))
        elif item:
            unread.append(item)
    return targets, unread


def arch_covered(capability: tuple[int, int], arch_list: str) -> bool:
    """Whether a build for arch_list runs on a GPU of this compute capability. Machine code for X.y runs
    on X.z for z >= y (8.6 on an 8.9 GPU), but an arch-specific build (9.0a) only on X.y itself; PTX
    for an older architecture runs on any newer GPU, which compiles it when the module loads."""
    for major, minor, suffix, ptx in parse_arch_list(arch_list):
        if (major, minor) == capability:
            return True
        if suffix != "a" and major == capability[0] and minor <= capability[1]:
            return True
        if ptx and suffix == "" and (major, minor) <= capability:
            return True
    return False


def arch_list_of(names: list[str]) -> str:
    """Architecture names (sm_90, compute_120, sm_90a) as a TORCH_CUDA_ARCH_LIST ("9.0;12.0+PTX", "9.0a")."""
    entries = []
    for name in names:
        match = re.fullmatch(r"(sm|compute)_(\d+)(\d)([af]?)", name)
        if match:
            entries.append(f"{match[2]}.{match[3]}{match[4]}" + ("+PTX" if match[1] == "compute" else ""))
    return ";".join(entries)


def arch_sort_key(name: str) -> tuple[int, str]:
    match = re.search(r"_(\d+)([af]?)$", name)
    return (int(match[1]), match[2]) if match else (0, name)


def default_arch_list() -> str | None:
    """setup.py's DEFAULT_ARCH_LIST, read from its text (setup.py builds when it runs)."""
    try:
        with open(os.path.join(HERE, "setup.py")) as source:
            tree = ast.parse(source.read())
    except OSError:
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "DEFAULT_ARCH_LIST" for t in node.targets):
            return ast.literal_eval(node.value)
    return None


def find_cuobjdump() -> str | None:
    """cuobjdump of the CUDA Toolkit ($CUDA_HOME/bin, PATH, /usr/local/cuda), else the one inside the
    nvidia-cuda-cuobjdump package from PyPI."""
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")):
        if home and os.access(os.path.join(home, "bin", "cuobjdump"), os.X_OK):
            return os.path.join(home, "bin", "cuobjdump")
    found = shutil.which("cuobjdump")
    if found:
        return found
    if os.access("/usr/local/cuda/bin/cuobjdump", os.X_OK):
        return "/usr/local/cuda/bin/cuobjdump"
    try:
        files = importlib.metadata.distribution("nvidia-cuda-cuobjdump").files or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in files:
        if file.name == "cuobjdump" and os.access(file.locate(), os.X_OK):
            return str(file.locate())
    return None


class ToolMissing(Exception):
    pass


def device_code(library: str) -> tuple[set[str], set[str]]:
    """The machine code (SASS: sm_90, ...) and PTX (compute_90, ...) in a built library, read with cuobjdump.
    Raises ToolMissing without cuobjdump, RuntimeError when cuobjdump cannot read the file."""
    cuobjdump = find_cuobjdump()
    if cuobjdump is None:
        raise ToolMissing("cuobjdump not found (not in $CUDA_HOME/bin, on PATH, or from nvidia-cuda-cuobjdump)")
    sass, ptx = set(), set()
    for flag, names, suffix in (("--list-elf", sass, "cubin"), ("--list-ptx", ptx, "ptx")):
        run = subprocess.run([cuobjdump, flag, library], capture_output=True, text=True)
        if run.returncode != 0:
            if "does not contain device code" in run.stderr:
                return set(), set()
            raise RuntimeError(f"{cuobjdump} {flag} {library}: {run.stderr.strip() or run.returncode}")
        # "ELF file    1: _C.1.sm_90.cubin", "PTX file    1: _C.1.sm_90.ptx" (PTX is named for its
        # virtual architecture's number: compute_90).
        for code in re.findall(rf"\.sm_(\d+[af]?)\.{suffix}\b", run.stdout):
            names.add(f"sm_{code}" if suffix == "cubin" else f"compute_{code}")
    return sass, ptx


def describe(sass: set[str], ptx: set[str]) -> str:
    parts = []
    if sass:
        parts.append("SASS " + " ".join(sorted(sass, key=arch_sort_key)))
    if ptx:
        parts.append("PTX " + " ".join(sorted(ptx, key=arch_sort_key)))
    return ", ".join(parts) or "no device code"


# The preflight.


def cuda_major(version: str | None) -> str | None:
    return version.split(".")[0] if version else None


def check_torch(report: Report):
    try:
        import torch
    except ImportError as error:
        report.fail(
            f"torch does not import ({error})",
            "install a CUDA build of torch first: pip install torch (https://pytorch.org/get-started/locally/)",
        )
        return None
    if torch.version.cuda is None:
        report.fail(
            f"torch {torch.__version__} is a CPU-only build",
            "install a CUDA build of torch (pip install torch on Linux), then rebuild",
        )
    else:
        where = os.path.dirname(torch.__file__)
        report.ok(f"torch {torch.__version__}, built with CUDA {torch.version.cuda}, at {where}")
    return torch


def check_nvcc(report: Report, torch) -> None:
    from torch.utils.cpp_extension import CUDA_HOME

    nvcc = os.path.join(CUDA_HOME, "bin", "nvcc") if CUDA_HOME else shutil.which("nvcc")
    want = cuda_major(torch.version.cuda) or "?"
    if not nvcc or not os.path.exists(nvcc):
        report.fail(
            "nvcc not found (CUDA_HOME unset and no nvcc on PATH)",
            f"install the CUDA Toolkit {want}.x and set CUDA_HOME to it, or put its bin/ on PATH",
        )
        return
    output = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    release = re.search(r"release (\d+)\.(\d+)", output)
    if not release:
        report.fail(f"{nvcc} --version printed no release", "check the CUDA Toolkit installation")
        return
    if torch.version.cuda and release[1] != want:
        report.fail(
            f"nvcc {release[1]}.{release[2]} ({nvcc}) but torch is built with CUDA {torch.version.cuda}: "
            "the CUDA major versions must match",
            f"install the CUDA Toolkit {want}.x and set CUDA_HOME to it, or install a torch built for "
            f"CUDA {release[1]} (https://pytorch.org/get-started/locally/)",
        )
    else:
        report.ok(f"nvcc {release[1]}.{release[2]} at {nvcc}")


def check_ninja(report: Report) -> None:
    from torch.utils.cpp_extension import is_ninja_available

    if is_ninja_available():
        version = subprocess.run(["ninja", "--version"], capture_output=True, text=True).stdout.strip()
        report.ok(f"ninja {version}")
    else:
        report.fail(
            "ninja is not on PATH: the build would fall back to one slow compile at a time",
            "pip install ninja (into the environment you build in)",
        )


def check_gpu(report: Report, torch) -> tuple[int, int] | None:
    if not torch.cuda.is_available():
        report.warn(
            "no CUDA GPU visible: the build works, the CUDA tests and the benchmark will not run",
            "run on a machine with an NVIDIA GPU and driver (check nvidia-smi, CUDA_VISIBLE_DEVICES)",
        )
        if "TORCH_CUDA_ARCH_LIST" in os.environ:
            report.ok(f"a build here targets TORCH_CUDA_ARCH_LIST={os.environ['TORCH_CUDA_ARCH_LIST']}")
        else:
            report.ok(f"a build here targets {default_arch_list()} (setup.py's default without a GPU)")
        return None
    capability = torch.cuda.get_device_capability()
    sm = f"{capability[0]}.{capability[1]}"
    report.ok(f"GPU {torch.cuda.get_device_name()}, compute capability {sm} (sm_{capability[0]}{capability[1]})")
    torch_archs = torch.cuda.get_arch_list()
    if torch_archs and not arch_covered(capability, arch_list_of(torch_archs)):
        report.fail(
            f"this torch has no kernels for sm_{capability[0]}{capability[1]} (it has {' '.join(torch_archs)})",
            "install a torch build that supports this GPU (a newer release or another CUDA variant)",
        )
    arch_list = os.environ.get("TORCH_CUDA_ARCH_LIST")
    if arch_list is None:
        report.ok(f"TORCH_CUDA_ARCH_LIST unset: setup.py builds for this GPU ({sm})")
    elif arch_covered(capability, arch_list):
        report.ok(f"TORCH_CUDA_ARCH_LIST={arch_list} covers {sm}")
    else:
        report.fail(
            f"TORCH_CUDA_ARCH_LIST={arch_list} does not include this GPU ({sm}): the op would fail with "
            "'no kernel image is available for execution on the device'",
            f'export TORCH_CUDA_ARCH_LIST="{sm}" (or add it to the list), then rebuild: {REBUILD}',
        )
    return capability


def built_library() -> str | None:
    """The built extension: beside this file (an in-place or editable build), else where the package is installed."""
    libraries = sorted(glob.glob(os.path.join(HERE, PACKAGE, "_C*.so")))
    if not libraries:
        spec = importlib.util.find_spec(PACKAGE)
        for folder in (spec.submodule_search_locations or []) if spec else []:
            libraries += sorted(glob.glob(os.path.join(folder, "_C*.so")))
    return libraries[-1] if libraries else None


def shown(library: str) -> str:
    return os.path.relpath(library, HERE) if library.startswith(HERE + os.sep) else library


# Loads the extension after torch, as the package does, in a process of its own.
LOAD = "import ctypes, sys, torch; ctypes.CDLL(sys.argv[1])"


def check_extension(report: Report, torch, capability: tuple[int, int] | None) -> None:
    library = built_library()
    if library is None:
        report.warn(
            f"{PACKAGE}/_C*.so is not built here yet (or the package is installed elsewhere)", f"build it: {REBUILD}"
        )
        return
    name = shown(library)
    load = subprocess.run([sys.executable, "-c", LOAD, library], capture_output=True, text=True)
    if load.returncode != 0:
        message = (load.stderr.strip().splitlines() or ["(no message)"])[-1]
        if "undefined symbol" in message:
            report.fail(
                f"{name} does not load against torch {torch.__version__}: {message}. It was built against "
                "another torch: an install with build isolation (which downloads its own torch to build "
                "against) or a torch upgraded since the build",
                f"rebuild against this torch, without build isolation: {REBUILD}",
            )
        else:
            report.fail(f"{name} does not load: {message}", f"rebuild: {REBUILD}")
        return
    report.ok(f"{name} loads")
    try:
        sass, ptx = device_code(library)
    except ToolMissing as missing:
        report.warn(f"the architectures inside {name} are not known: {missing}", GET_CUOBJDUMP)
        return
    except RuntimeError as error:
        report.warn(f"the architectures inside {name} are not known: {error}", f"rebuild: {REBUILD}")
        return
    report.ok(f"{name} holds {describe(sass, ptx)}")
    if capability and not arch_covered(capability, arch_list_of(sorted(sass | ptx))):
        sm = f"{capability[0]}.{capability[1]}"
        report.fail(
            f"{name} has no code for this GPU (sm_{capability[0]}{capability[1]}): calls fail with "
            "'no kernel image is available for execution on the device'",
            f'rebuild for it: TORCH_CUDA_ARCH_LIST="{sm}" {REBUILD}',
        )


def preflight() -> int:
    report = Report()
    print(f"{PACKAGE} doctor: Python {sys.version.split()[0]} at {sys.executable}")
    torch = check_torch(report)
    if torch is not None:
        if torch.version.cuda is not None:
            check_nvcc(report, torch)
        check_ninja(report)
        capability = check_gpu(report, torch)
        check_extension(report, torch, capability)
    print("\nproblems found: fix the FAIL lines above" if report.failed else "\nno problems found")
    return 1 if report.failed else 0


# The audits.


def audited_library(report: Report, given: str | None) -> str | None:
    library = given or built_library()
    if library is None:
        report.fail(f"no built extension ({PACKAGE}/_C*.so) here or installed", f"build it: {REBUILD}")
    elif not os.path.isfile(library):
        report.fail(f"{library} is not a file", "pass the built extension: --library path/to/_C*.so")
        library = None
    return library


def audit_archs(arch_list: str | None, given: str | None) -> int:
    report = Report()
    if arch_list is not None:
        source = "--arch-list"
    elif "TORCH_CUDA_ARCH_LIST" in os.environ:
        arch_list, source = os.environ["TORCH_CUDA_ARCH_LIST"], "TORCH_CUDA_ARCH_LIST"
    else:
        arch_list, source = default_arch_list(), "setup.py's DEFAULT_ARCH_LIST"
    library = audited_library(report, given)
    if arch_list is None:
        report.fail("no architecture list to check against (no setup.py here)", "pass one: --arch-list '8.0;9.0+PTX'")
    if report.failed:
        return 1
    name = shown(library)
    print(f"{PACKAGE} architectures audit: {name} against {arch_list} ({source})")
    targets, unread = arch_targets(arch_list)
    for item in unread:
        report.fail(f"'{item}' in the list is not an architecture number", "name architectures as numbers: 8.0;9.0+PTX")
    if not targets and not unread:
        report.fail("the architecture list is empty", "pass one: --arch-list '8.0;9.0+PTX'")
    try:
        sass, ptx = device_code(library)
    except ToolMissing as missing:
        report.fail(str(missing), GET_CUOBJDUMP)
        return 1
    except RuntimeError as error:
        report.fail(f"cuobjdump cannot read {name}: {error}", f"rebuild: {REBUILD}")
        return 1
    fix = f'rebuild for the list: TORCH_CUDA_ARCH_LIST="{arch_list}" {REBUILD}'
    for item, want_sass, want_ptx in targets:
        if want_sass in sass:
            report.ok(f"SASS {want_sass} ({item})")
        else:
            report.fail(f"no SASS for {want_sass} ({item} in the list): {name} holds {describe(sass, ptx)}", fix)
        if want_ptx and want_ptx in ptx:
            report.ok(f"PTX {want_ptx} ({item}: GPUs newer than {want_sass} compile it when the module loads)")
        elif want_ptx:
            report.fail(f"no PTX for {want_ptx} ({item} in the list): {name} holds {describe(sass, ptx)}", fix)
    if targets and not any(want_ptx for _, _, want_ptx in targets):
        newest = max((want_sass for _, want_sass, _ in targets), key=arch_sort_key)
        report.info(f"the list has no +PTX: GPUs newer than {newest} cannot run this build")
    extra = (sass - {t[1] for t in targets}) | (ptx - {t[2] for t in targets})
    if extra:
        report.info(f"also in {name}, not in the list: {' '.join(sorted(extra, key=arch_sort_key))}")
    print("\narchitectures audit failed: see the FAIL lines above" if report.failed else "\narchitectures audit passed")
    return 1 if report.failed else 0


# The namespaces of libtorch's C++ API. A symbol of one is mangled as a nested name that starts with it:
# _ZN2at..., _ZNK3c10... (a const member), _ZTVN5torch... (a vtable), _ZTIN3c10... (typeinfo),
# _ZTHN3c10... (a thread-local's init), _ZGVZN2at... (the guard of a function's static).
LIBTORCH_NAMESPACES = {"2at": "at", "3c10": "c10", "5torch": "torch", "6caffe2": "caffe2"}
LIBTORCH_SYMBOL = re.compile(r"_Z(?:T[VTISHW]|G[VR])?Z?N[rVKRO]*(2at|3c10|5torch|6caffe2)")
# The C shim a stable-ABI build calls instead (plain C names).
SHIM_SYMBOL = re.compile(r"(aoti_torch_|torch_)\w+")


def undefined_symbols(library: str) -> list[str]:
    """The library's undefined dynamic symbols, mangled, without their version (nm -D --undefined-only)."""
    nm = shutil.which("nm")
    if nm is None:
        raise ToolMissing("nm not found")
    run = subprocess.run([nm, "-D", "--undefined-only", "--format=posix", library], capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(run.stderr.strip() or f"nm exited {run.returncode}")
    return sorted({line.split()[0].split("@")[0] for line in run.stdout.splitlines() if line.strip()})


def demangle(symbols: list[str]) -> list[str]:
    cxxfilt = shutil.which("c++filt")
    if cxxfilt is None or not symbols:
        return symbols
    run = subprocess.run([cxxfilt], input="\n".join(symbols) + "\n", capture_output=True, text=True)
    names = run.stdout.splitlines()
    return names if run.returncode == 0 and len(names) == len(symbols) else symbols


def torch_defines(symbols: list[str]) -> tuple[str, list[str]] | None:
    """The installed torch's version and which of the symbols its libraries do not define, or None
    when torch is not importable (nm -D --defined-only over torch/lib)."""
    found = importlib.util.find_spec("torch")
    if found is None or not found.submodule_search_locations:
        return None
    folder = found.submodule_search_locations[0]
    defined: set[str] = set()
    for library in sorted(glob.glob(os.path.join(folder, "lib", "lib*.so*"))):
        nm = [shutil.which("nm") or "nm", "-D", "--defined-only", "--format=posix", library]
        run = subprocess.run(nm, capture_output=True, text=True)
        defined.update(line.split()[0].split("@")[0] for line in run.stdout.splitlines() if line.strip())
    try:
        version = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        version = "(unknown version)"
    return version, [s for s in symbols if s not in defined]


def torch_requirement() -> str | None:
    """The torch requirement in the installed package's metadata (written by setup.py at build time)."""
    try:
        requirements = importlib.metadata.requires(DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        return None
    return next((r for r in requirements if re.match(r"torch\b", r)), None)


def audit_abi(expect_none: bool, given: str | None) -> int:
    report = Report()
    expect_none = expect_none or STABLE_ABI
    library = audited_library(report, given)
    if report.failed:
        return 1
    name = shown(library)
    print(f"{PACKAGE} ABI audit: {name}")
    try:
        symbols = undefined_symbols(library)
    except ToolMissing as missing:
        report.fail(str(missing), "install binutils (apt-get install binutils), which has nm and c++filt")
        return 1
    except RuntimeError as error:
        report.fail(f"nm cannot read {name}: {error}", f"rebuild: {REBUILD}")
        return 1
    libtorch = [s for s in symbols if LIBTORCH_SYMBOL.match(s)]
    shim = [s for s in symbols if SHIM_SYMBOL.fullmatch(s)]
    by_namespace: dict[str, int] = {}
    listed = sorted(
        (LIBTORCH_NAMESPACES[LIBTORCH_SYMBOL.match(symbol)[1]], readable)
        for symbol, readable in zip(libtorch, demangle(libtorch), strict=True)
    )
    for namespace, readable in listed:
        by_namespace[namespace] = by_namespace.get(namespace, 0) + 1
        print(f"      {namespace:6} {readable}")
    counts = ", ".join(f"{namespace}:: {count}" for namespace, count in sorted(by_namespace.items()))
    pinned = torch_requirement()
    tied = (
        f"{name} runs only with the torch release it was built against"
        + (f" (the package requires {pinned})" if pinned else "")
        + ": libtorch's C++ ABI changes between releases, and a symbol gone from a later torch stops the import "
        "with 'undefined symbol'"
    )
    if libtorch and expect_none:
        report.fail(
            f"{len(libtorch)} undefined libtorch C++ symbols ({counts}), listed above; none expected: {tied}",
            "build against the LibTorch stable ABI only (torch/csrc/stable, torch/headeronly), "
            "which reaches torch through its C shim",
        )
    elif libtorch:
        report.info(f"{len(libtorch)} undefined libtorch C++ symbols ({counts}), listed above: {tied}")
    else:
        report.ok(f"no undefined libtorch C++ symbols ({len(symbols)} undefined symbols in all)")
    report.info(f"{len(shim)} undefined symbols of torch's C shim (aoti_torch_*, torch_*)")
    if STABLE_ABI:
        check_shim(report, shim)
    print("\nABI audit failed: see the FAIL lines above" if report.failed else "\nABI audit passed")
    return 1 if report.failed else 0


def check_shim(report: Report, shim: list[str]) -> None:
    """Whether the torch installed here defines every shim symbol the extension calls."""
    defines = torch_defines(shim)
    if defines is None:
        report.fail("torch is not importable, so its C shim cannot be checked", "install torch (pip install torch)")
        return
    version, missing = defines
    if missing:
        report.fail(
            f"torch {version} does not define {len(missing)} of them: {' '.join(missing)}; the extension does not "
            "load into this torch",
            "install a torch from setup.py's OLDEST_TORCH on, or rebuild with a TORCH_TARGET_VERSION this torch has",
        )
    else:
        report.ok(f"torch {version} defines all {len(shim)} shim symbols (run this with the floor torch as well)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    commands = parser.add_subparsers(dest="command")
    archs = commands.add_parser("archs", help="audit: SASS for each architecture of the list, PTX where it says +PTX")
    archs.add_argument("--arch-list", help="e.g. '8.0;9.0+PTX' (default: TORCH_CUDA_ARCH_LIST, else setup.py's)")
    archs.add_argument("--library", help=f"the extension to read (default: the built {PACKAGE}/_C*.so)")
    abi = commands.add_parser("abi", help="audit: the libtorch C++ symbols the extension needs")
    abi.add_argument("--expect-none", action="store_true", help="fail when there is any (a stable-ABI build)")
    abi.add_argument("--library", help=f"the extension to read (default: the built {PACKAGE}/_C*.so)")
    args = parser.parse_args(argv)
    if args.command == "archs":
        return audit_archs(args.arch_list, args.library)
    if args.command == "abi":
        return audit_abi(args.expect_none, args.library)
    return preflight()


if __name__ == "__main__":
    sys.exit(main())
