"""The C++ and CUDA sources of the option combinations compile against the installed torch.

Combinations share most sources byte for byte, so each distinct (source, local headers, flags)
is compiled once: nvcc for .cu (device code for sm_90, as CI builds), g++ -fsyntax-only for .cpp.
CI compiles the combinations with every optional dtype or none (both kernels, both registrations,
with and without CPU kernels: a quarter of the nvcc work); the dtype sets between those change only
the list the dispatch covers, and the GPU matrix (`scripts/bake.py matrix`), run once per template
change, builds all 96. COMPILE_EVERY_COMBINATION=1 compiles all 96 here.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sysconfig
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import bake
import pytest
from test_stable_abi import setup_constants

torch_extension = pytest.importorskip("torch.utils.cpp_extension")

INCLUDE = re.compile(r'#include "([^"]+)"')
ARCH = "-gencode=arch=compute_90,code=sm_90"


def include_flags() -> list[str]:
    paths = torch_extension.include_paths(device_type="cuda") + [sysconfig.get_paths()["include"]]
    return [f"-I{p}" for p in paths]


def defines(source: Path, options: dict) -> list[str]:
    """The defines setup.py passes; the limited Python API only matters where Python.h is included.
    A stable-ABI project's every unit gets the floor's TORCH_TARGET_VERSION and USE_CUDA (which
    declares the C shim's CUDA functions), computed by the project's own setup.py."""
    flags = ["-DTORCH_EXTENSION_NAME=_C", "-DTORCH_API_INCLUDE_EXTENSION_H"]
    if options["registration"] == "torch_library" and source.name == "_registration.cpp":
        flags.append("-DPy_LIMITED_API=0x030A0000")
    if options.get("torch_abi") == "stable":
        flags += [f"-DTORCH_TARGET_VERSION={stable_target(csrc_of(source).parent):#x}", "-DUSE_CUDA"]
    return flags


def stable_target(project: Path) -> int:
    """TORCH_TARGET_VERSION as the project's setup.py computes it from its OLDEST_TORCH."""
    constants = setup_constants(project)
    return constants["torch_target_version"](constants["OLDEST_TORCH"])


def command(source: Path, options: dict, obj: Path) -> list[str]:
    common = [f"-I{csrc_of(source)}", *include_flags(), *defines(source, options), bake.torch_cxx_standard()]
    if source.suffix == ".cu":
        nvcc = os.path.join(torch_extension.CUDA_HOME or "/usr/local/cuda", "bin", "nvcc")
        return [nvcc, *torch_extension.COMMON_NVCC_FLAGS, ARCH, "-O0", *common, "-Xcompiler", "-fPIC",
                "-c", str(source), "-o", str(obj)]
    return ["g++", "-fsyntax-only", "-Wall", "-Werror=return-type", *common, str(source)]


def csrc_of(source: Path) -> Path:
    """The project's csrc/, setup.py's include path (a source outside a project: its own folder)."""
    return next((p for p in source.parents if p.name == "csrc"), source.parent)


def local_headers(source: Path) -> list[Path]:
    """The project's headers a source includes, directly or through another (found beside the
    includer or under csrc/, as setup.py's include path has it)."""
    found: dict[Path, None] = {}
    pending = [source]
    while pending:
        current = pending.pop()
        for name in INCLUDE.findall(current.read_text()):
            for candidate in (current.parent / name, csrc_of(source) / name):
                if candidate.is_file() and candidate not in found:
                    found[candidate] = None
                    pending.append(candidate)
                    break
    return sorted(found)


def unit_key(source: Path, options: dict) -> str:
    """Identity of one compilation: the source, the local headers it includes, the defines."""
    digest = hashlib.sha256(source.read_bytes())
    for header in local_headers(source):
        digest.update(header.read_bytes())
    digest.update(" ".join(defines(source, options)).encode())
    return f"{source.suffix}:{digest.hexdigest()}"


EVERY_COMBINATION = os.environ.get("COMPILE_EVERY_COMBINATION") == "1"


def compiled_here(options: dict) -> bool:
    return EVERY_COMBINATION or options["float16"] == options["bfloat16"] == options["float64"]


@pytest.mark.template_change
def test_every_distinct_source_compiles(rendered_matrix, tmp_path):
    units: dict[str, tuple[Path, dict, str]] = {}
    for name, (options, project) in rendered_matrix.items():
        if not compiled_here(options):
            continue
        for source in sorted(p for p in (project / "csrc").rglob("*.c*") if p.suffix in (".cpp", ".cu")):
            units.setdefault(unit_key(source, options), (source, options, name))
    # 2 kernels x the dtype sets compiled here (8, or 2 in CI) of .cu files, at least.
    assert sum(key.startswith(".cu:") for key in units) >= 2 * (8 if EVERY_COMBINATION else 2)

    def compile_one(item):
        key, (source, options, name) = item
        obj = tmp_path / f"{key.replace(':', '_')}.o"
        result = subprocess.run(command(source, options, obj), capture_output=True, text=True, check=False)
        return name, source.name, result

    failures = []
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for name, source, result in pool.map(compile_one, units.items()):
            if result.returncode != 0:
                failures.append(f"{name}/csrc/{source}:\n{result.stderr[-3000:]}")
    assert not failures, "\n\n".join(failures)
