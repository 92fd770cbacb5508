"""Real builds: render a project, build its CUDA extension with nvcc, run the project's own tests.

On a machine without a GPU the CPU tests run and the CUDA tests skip; with a GPU nothing may skip but
the tests that need two GPUs, on a machine with one.
The full matrix of combinations on a GPU is `python scripts/bake.py matrix --require-gpu`.
"""

from __future__ import annotations

import bake
import pytest
import torch

BUILT = [
    # The defaults: elementwise, torch_library on the stable ABI, every dtype, CPU kernels.
    {"kernel": "elementwise", "registration": "torch_library", "torch_abi": "stable", "float16": True,
     "bfloat16": True, "float64": True, "cpu_impl": True},
    {"kernel": "rowwise", "registration": "pybind11", "torch_abi": "versioned", "float16": False, "bfloat16": True,
     "float64": True, "cpu_impl": True},
    # The same glue on libtorch's C++ API, with its C++ autograd.
    {"kernel": "elementwise", "registration": "torch_library", "torch_abi": "versioned", "float16": False,
     "bfloat16": True, "float64": True, "cpu_impl": True},
    # The rowwise kind's default: torch_library on the stable ABI, every dtype, CPU kernels.
    {"kernel": "rowwise", "registration": "torch_library", "torch_abi": "stable", "float16": True,
     "bfloat16": True, "float64": True, "cpu_impl": True},
    # No CPU kernels: on a CPU machine only the refusal of CPU tensors can run (the GPU matrix runs its suite).
    pytest.param({"kernel": "rowwise", "registration": "torch_library", "torch_abi": "stable", "float16": True,
                  "bfloat16": False, "float64": False, "cpu_impl": False}, marks=pytest.mark.template_change),
]
# The default build (stable ABI) and its versioned twin, for the audits; the rowwise kind's stable build.
STABLE, VERSIONED, ROWWISE_STABLE = BUILT[0], BUILT[2], BUILT[3]


@pytest.mark.parametrize("options", BUILT, ids=bake.combo_id)
def test_project_builds_and_passes_its_tests(tmp_path, built_project, options):
    project, build, build_log = built_project(options)
    assert build.returncode == 0, build_log.read_text()[-5000:]
    assert list((project / "matrix_op").glob("_C*.so")), "no extension module was built"

    counts = bake.run_tests(project, tmp_path / "test.log")
    log = (tmp_path / "test.log").read_text()
    assert counts.failed == 0, log[-5000:]
    assert counts.passed > 0, log[-5000:]
    if torch.cuda.is_available():
        assert counts.unexpected_skips() == 0, log[-5000:]
