"""Builds my_cuda_op._C, the CUDA extension, with torch.utils.cpp_extension and ninja.

Environment:
  TORCH_CUDA_ARCH_LIST  GPU architectures to build for, e.g. "9.0" or "8.0;9.0+PTX". When unset, the
                        GPUs of this machine (the dev loop: one architecture, the fastest build), or
                        DEFAULT_ARCH_LIST on a machine without one (CI, wheels for others' GPUs).
  DEBUG=1               -O0 with host and device debug info (-g -G), for cuda-gdb and compute-sanitizer.
  OP_DTYPE=float32      build the kernels for float32 only: a faster edit-build loop (the other dtypes
                        are then refused with the usual message).
  MAX_JOBS              parallel compile jobs for ninja.
  USE_CUDA=0            the CPU kernels alone, built with the host compiler: no nvcc, no CUDA build of torch
                        (CPU-only CI, laptops); refused by a project without CPU kernels.
"""

import glob
import os
import re
import subprocess

import torch
from setuptools import Extension, setup
from torch.utils.cpp_extension import CUDA_HOME, BuildExtension, CppExtension, CUDAExtension

# The GPUs CUDA 13 serves: machine code for Ampere (8.0: A100; 8.6: RTX 30, A10, A40, which also runs on
# Ada's 8.9), Hopper (9.0: H100, H200), Blackwell datacenter (10.0: B200, GB200, and B300's 10.3) and
# consumer (12.0: RTX 50, RTX PRO 6000), plus PTX of the newest, which later GPUs compile when the module
# loads. `python doctor.py archs` checks that a built extension holds them.
DEFAULT_ARCH_LIST = "8.0;8.6;9.0;10.0;12.0+PTX"
# torch_library builds use only the stable Python ABI: one wheel serves every Python >= 3.10.
PY_LIMITED_API = True
# Built against the LibTorch stable ABI (torch/csrc/stable, torch/headeronly), which reaches libtorch
# only through its C shim: one build loads into every torch from OLDEST_TORCH on.
STABLE_ABI = True
DEBUG = os.environ.get("DEBUG", "0") == "1"
ONLY_FLOAT32 = os.environ.get("OP_DTYPE", "") == "float32"
USE_CUDA = os.environ.get("USE_CUDA", "1") != "0"
# Whether the project has CPU kernels, which build without the CUDA ones (cpu_impl).
CPU_KERNELS_ALONE = True
# torch 2.11 is the first release whose PyPI wheels are built with CUDA 13 (older ones need a CUDA 12
# toolkit, which is not tested). Tested: torch 2.11 and the newest torch on PyPI.
OLDEST_TORCH = (2, 11)


def torch_target_version(release: tuple[int, int]) -> int:
    """TORCH_TARGET_VERSION for a torch release: the stable ABI's version number, major and minor in its
    top two bytes (torch/csrc/stable/version.h's TORCH_VERSION_<major>_<minor>_0). The headers then offer
    only what that release's C shim has, so the extension loads into it and every later torch."""
    major, minor = release
    return (major << 56) | (minor << 48)


def check_toolchain() -> None:
    """Refuse to build without CUDA rather than produce a package with no kernels."""
    if not USE_CUDA:
        if not CPU_KERNELS_ALONE:
            raise RuntimeError(
                "USE_CUDA=0 builds the CPU kernels alone, but this project has none that build without the CUDA "
                "ones (it was generated with cpu_impl=no); "
                "unset USE_CUDA and build with nvcc"
            )
        return
    if torch.version.cuda is None:
        raise RuntimeError(
            f"torch {torch.__version__} is a CPU-only build; install a CUDA build of torch "
            "(e.g. `pip install torch` on Linux) and build again"
        )
    nvcc = os.path.join(CUDA_HOME, "bin", "nvcc") if CUDA_HOME else None
    if nvcc is None or not os.path.exists(nvcc):
        raise RuntimeError(
            f"nvcc was not found; install the CUDA Toolkit {torch.version.cuda.split('.')[0]}.x "
            "(the CUDA major version of your torch) and set CUDA_HOME or put nvcc on PATH"
        )
    # nvcc and torch must share the CUDA major version; a minor difference (13.0 and 13.2) builds.
    version = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    release = re.search(r"release (\d+)\.(\d+)", version)
    torch_major = torch.version.cuda.split(".")[0]
    if release and release[1] != torch_major:
        raise RuntimeError(
            f"nvcc ({nvcc}) is CUDA {release[1]}.{release[2]}, but torch {torch.__version__} is built with CUDA "
            f"{torch.version.cuda}; install the CUDA Toolkit {torch_major}.x and set CUDA_HOME to it, or install a "
            f"torch built for CUDA {release[1]} (https://pytorch.org/get-started/locally/)"
        )
    if "TORCH_CUDA_ARCH_LIST" not in os.environ and not torch.cuda.is_available():
        # Without a GPU to ask, torch would build for every architecture it knows.
        os.environ["TORCH_CUDA_ARCH_LIST"] = DEFAULT_ARCH_LIST


def torch_requirement() -> str:
    """The torch releases this build runs with, as the package's requirement.

    A stable-ABI build runs with every torch from OLDEST_TORCH on (`torch>=2.11`): it calls libtorch
    only through the C shim of that release, which later releases keep. Otherwise:

    The extension links libtorch's C++ API, which changes between torch releases, so a wheel runs only
    with the release it was built with: its metadata says so (`torch==2.11.*`). pip treats that as a
    requirement to satisfy, not a reason to stop: installing the wheel into an environment with another
    torch uninstalls that torch and installs the pinned release (with its CUDA libraries). It refuses
    only when the same command also names the torch to keep (`pip install the.whl torch==2.15.0`, or a
    constraints file). A source build (sdist, `pip install -e .`) compiles against the torch already
    installed, so the pin always names that one.
    """
    release = tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2])
    if release < OLDEST_TORCH:
        raise RuntimeError(
            f"torch {torch.__version__} is older than torch {OLDEST_TORCH[0]}.{OLDEST_TORCH[1]}, the oldest this "
            f"project supports; upgrade it (pip install -U torch) and build again"
        )
    if STABLE_ABI:
        return f"torch>={OLDEST_TORCH[0]}.{OLDEST_TORCH[1]}"
    return f"torch=={release[0]}.{release[1]}.*"


def extension() -> Extension:
    cxx_flags = ["-O0", "-g"] if DEBUG else ["-O3"]
    # No -std flag: torch.utils.cpp_extension passes the C++ standard its headers need (C++20 from torch 2.12).
    nvcc_flags = ["-O0", "-g", "-G"] if DEBUG else ["-O3", "-lineinfo"]
    if PY_LIMITED_API:
        cxx_flags.append("-DPy_LIMITED_API=0x030A0000")
    if STABLE_ABI:
        # Every translation unit, host and device: the headers' inline code must match the floor's shim.
        # USE_CUDA declares the shim's CUDA functions (the current stream). Hidden symbols, as the stable
        # headers' own: the module exports PyInit__C alone.
        stable = [f"-DTORCH_TARGET_VERSION={torch_target_version(OLDEST_TORCH):#x}"]
        stable += ["-DUSE_CUDA"] if USE_CUDA else []
        cxx_flags += [*stable, "-fvisibility=hidden"]
        nvcc_flags += [*stable, "-Xcompiler", "-fvisibility=hidden"]
    if ONLY_FLOAT32:
        cxx_flags.append("-DOP_ONLY_FLOAT32")
        nvcc_flags.append("-DOP_ONLY_FLOAT32")
    # USE_CUDA=0: the host compiler alone, over the .cpp files (the CPU kernels and the glue).
    kinds = ["cpp", "cu"] if USE_CUDA else ["cpp"]
    sources = [path for kind in kinds for path in glob.glob(f"csrc/**/*.{kind}", recursive=True)]
    return (CUDAExtension if USE_CUDA else CppExtension)(
        name="my_cuda_op._C",
        sources=sorted(sources),
        include_dirs=[os.path.abspath("csrc")],
        extra_compile_args={"cxx": cxx_flags, "nvcc": nvcc_flags} if USE_CUDA else {"cxx": cxx_flags},
        py_limited_api=PY_LIMITED_API,
    )


check_toolchain()
setup(
    install_requires=[torch_requirement()],
    ext_modules=[extension()],
    cmdclass={"build_ext": BuildExtension},
    options={"bdist_wheel": {"py_limited_api": "cp310"}} if PY_LIMITED_API else {},
)
