"""Preflight for building and running my_cuda_op: reports torch and its CUDA version, nvcc,
ninja, the GPU and its architecture, and the built extension, and names the fix for each problem.

    python doctor.py          # before `pip install --no-build-isolation -e .`, or when an import fails

Exit status 1 when something would stop the build or the op (FAIL lines), 0 otherwise (warn lines
do not stop a build: no GPU, for example, only skips the CUDA tests). It never imports the package
itself, so it runs when the extension is missing or broken; it loads the built extension in a
separate process.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys

PACKAGE = "my_cuda_op"
HERE = os.path.dirname(os.path.abspath(__file__))
# setup.py's default when TORCH_CUDA_ARCH_LIST is unset on a machine without a GPU.
DEFAULT_ARCH_LIST = "8.0;9.0+PTX"
REBUILD = "pip install --no-build-isolation -e ."


class Report:
    def __init__(self) -> None:
        self.failed = False

    def ok(self, what: str) -> None:
        print(f"ok    {what}")

    def warn(self, what: str, fix: str) -> None:
        print(f"warn  {what}\n      -> {fix}")

    def fail(self, what: str, fix: str) -> None:
        self.failed = True
        print(f"FAIL  {what}\n      -> {fix}")


def parse_arch_list(text: str) -> list[tuple[int, int, bool]]:
    """TORCH_CUDA_ARCH_LIST ("8.0;9.0+PTX", "8.6 9.0a") as (major, minor, with PTX) entries."""
    entries = []
    for item in re.split(r"[;\s,]+", text.strip()):
        match = re.fullmatch(r"(\d+)\.(\d+)[af]?(\+PTX)?", item)
        if match:
            entries.append((int(match[1]), int(match[2]), bool(match[3])))
    return entries


def arch_covered(capability: tuple[int, int], arch_list: str) -> bool:
    """Whether a build for arch_list runs on a GPU of this compute capability: machine code for
    exactly it, or PTX for an older architecture, which the driver compiles for newer GPUs."""
    return any(
        (major, minor) == capability or (ptx and (major, minor) <= capability)
        for major, minor, ptx in parse_arch_list(arch_list)
    )


def arch_list_of(names: list[str]) -> str:
    """Architecture names (sm_90, compute_120, sm_90a) as a TORCH_CUDA_ARCH_LIST ("9.0;12.0+PTX")."""
    entries = []
    for name in names:
        match = re.fullmatch(r"(sm|compute)_(\d+)(\d)[af]?", name)
        if match:
            entries.append(f"{match[2]}.{match[3]}" + ("+PTX" if match[1] == "compute" else ""))
    return ";".join(entries)


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
        arch_list = os.environ.get("TORCH_CUDA_ARCH_LIST", f"{DEFAULT_ARCH_LIST} (setup.py's default without a GPU)")
        report.ok(f"TORCH_CUDA_ARCH_LIST={arch_list}")
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


def built_archs(library: str) -> list[str]:
    """The sm_XX machine code and compute_XX PTX in a built library, from cuobjdump when present."""
    from torch.utils.cpp_extension import CUDA_HOME

    cuobjdump = os.path.join(CUDA_HOME, "bin", "cuobjdump") if CUDA_HOME else shutil.which("cuobjdump")
    if not cuobjdump or not os.path.exists(cuobjdump):
        return []
    found = set()
    for flag in ("--list-elf", "--list-ptx"):
        output = subprocess.run([cuobjdump, flag, library], capture_output=True, text=True).stdout
        found |= set(re.findall(r"\.((?:sm|compute)_\d+[af]?)\.", output))
    return sorted(found)


# Loads the extension after torch, as the package does, in a process of its own.
LOAD = "import ctypes, sys, torch; ctypes.CDLL(sys.argv[1])"


def check_extension(report: Report, torch, capability: tuple[int, int] | None) -> None:
    libraries = sorted(glob.glob(os.path.join(HERE, PACKAGE, "_C*.so")))
    if not libraries:
        report.warn(
            f"{PACKAGE}/_C*.so is not built here yet (or the package is installed elsewhere)", f"build it: {REBUILD}"
        )
        return
    library = libraries[-1]
    name = os.path.relpath(library, HERE)
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
    archs = built_archs(library)
    report.ok(f"{name} loads" + (f"; device code for {' '.join(archs)}" if archs else ""))
    if capability and archs:
        if not arch_covered(capability, arch_list_of(archs)):
            sm = f"{capability[0]}.{capability[1]}"
            report.fail(
                f"{name} has no code for this GPU (sm_{capability[0]}{capability[1]}): calls fail with "
                "'no kernel image is available for execution on the device'",
                f'rebuild for it: TORCH_CUDA_ARCH_LIST="{sm}" {REBUILD}',
            )


def main() -> int:
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


if __name__ == "__main__":
    sys.exit(main())
