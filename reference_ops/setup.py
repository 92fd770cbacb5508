"""Build of the reference_ops extension (CPU + CUDA) against the installed torch.

Environment:
  TORCH_CUDA_ARCH_LIST  architectures to build, e.g. "9.0" (default "8.0;9.0+PTX"
                        when unset and no GPU is visible; the visible GPUs otherwise)
  DEBUG=1               -O0 -g host code and -G device code
  MAX_JOBS              parallel compile jobs (ninja)
"""

import glob
import os
import re
import shutil
import subprocess
import sys

import torch
from setuptools import setup
from torch.utils.cpp_extension import CUDA_HOME, BuildExtension, CUDAExtension

LIBRARY_NAME = "reference_ops"
HERE = os.path.dirname(os.path.abspath(__file__))


def require_nvcc() -> None:
    """The CUDA kernels are the point of this package: refuse a CPU-only build."""
    nvcc = os.path.join(CUDA_HOME, "bin", "nvcc") if CUDA_HOME else shutil.which("nvcc")
    if not nvcc or not os.path.exists(nvcc):
        sys.exit(
            "reference_ops: nvcc not found (CUDA_HOME is "
            f"{CUDA_HOME!r}). Install the CUDA toolkit matching torch "
            f"(torch.version.cuda = {torch.version.cuda}) and set CUDA_HOME, "
            "e.g. CUDA_HOME=/usr/local/cuda."
        )
    if torch.version.cuda is None:
        sys.exit("reference_ops: the installed torch has no CUDA support; install a CUDA build of torch.")
    # A CUDA minor difference (nvcc 13.0, torch built with 13.2) builds; a major one cannot.
    version = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    release = re.search(r"release (\d+)\.(\d+)", version)
    torch_major = torch.version.cuda.split(".")[0]
    if release and release[1] != torch_major:
        sys.exit(
            f"reference_ops: nvcc ({nvcc}) is CUDA {release[1]}.{release[2]}, but torch {torch.__version__} is "
            f"built with CUDA {torch.version.cuda}. Install the CUDA Toolkit {torch_major}.x and set CUDA_HOME "
            f"to it, or install a torch built for CUDA {release[1]} (https://pytorch.org/get-started/locally/)."
        )


def default_arch_list() -> None:
    """Without a visible GPU torch cannot guess the architectures: pick A100 and H100 (+PTX)."""
    if not os.environ.get("TORCH_CUDA_ARCH_LIST") and not torch.cuda.is_available():
        os.environ["TORCH_CUDA_ARCH_LIST"] = "8.0;9.0+PTX"


def get_extensions():
    require_nvcc()
    default_arch_list()
    debug = os.getenv("DEBUG", "0") == "1"
    cxx = ["-O0", "-g"] if debug else ["-O3"]
    # No -std flag: torch.utils.cpp_extension passes the C++ standard its own headers need.
    nvcc = ["-O0", "-g", "-G"] if debug else ["-O3", "-lineinfo"]
    sources = sorted(glob.glob(os.path.join(HERE, "csrc", "*.cpp")) + glob.glob(os.path.join(HERE, "csrc", "*.cu")))
    sources = [os.path.relpath(s, HERE) for s in sources]
    return [
        CUDAExtension(
            f"{LIBRARY_NAME}._C",
            sources,
            extra_compile_args={"cxx": cxx, "nvcc": nvcc},
            extra_link_args=["-O0", "-g"] if debug else [],
            # The module only holds PyInit__C: one build serves every CPython >= 3.9.
            py_limited_api=True,
        )
    ]


setup(
    ext_modules=get_extensions(),
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)},
    options={"bdist_wheel": {"py_limited_api": "cp39"}},
)
