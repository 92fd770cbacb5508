"""The generated project's audits of its built extension: `python doctor.py archs` (the machine code
and PTX inside it, read with cuobjdump) and `python doctor.py abi` (the libtorch C++ symbols it needs).

They run on the default combination as test_build.py builds it (sm_90, one build a session; the ABI
audit also on the rowwise kind's stable build and a versioned one), on a small library nvcc builds
here for setup.py's default architecture list (with the flags torch gives that list), and on
libraries gcc builds with chosen undefined symbols.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_build import BUILT, ROWWISE_STABLE, VERSIONED


def doctor(project: Path, *args: str, drop: tuple[str, ...] = ("TORCH_CUDA_ARCH_LIST",), **env: str):
    environ = {k: v for k, v in os.environ.items() if k not in drop}
    return subprocess.run([sys.executable, "doctor.py", *args], cwd=project, capture_output=True, text=True,
                          env={**environ, **env})


def fails(result: subprocess.CompletedProcess) -> list[str]:
    """Each FAIL line with the fix line below it."""
    lines = result.stdout.splitlines()
    return [f"{line}\n{lines[i + 1]}" for i, line in enumerate(lines) if line.startswith("FAIL")]


def load_doctor(project: Path):
    spec = importlib.util.spec_from_file_location("doctor", project / "doctor.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def built(built_project) -> Path:
    project, build, log = built_project(BUILT[0])
    assert build.returncode == 0, log.read_text()[-5000:]
    return project


@pytest.fixture(scope="module")
def default_archs(built) -> str:
    arch_list = load_doctor(built).default_arch_list()
    assert arch_list, "setup.py has no DEFAULT_ARCH_LIST"
    return arch_list


@pytest.fixture(scope="module")
def default_arch_library(tmp_path_factory, default_archs) -> Path:
    """A small CUDA library built with the nvcc flags torch derives from setup.py's DEFAULT_ARCH_LIST."""
    from torch.utils.cpp_extension import CUDA_HOME, _get_cuda_arch_flags

    saved = os.environ.get("TORCH_CUDA_ARCH_LIST")
    os.environ["TORCH_CUDA_ARCH_LIST"] = default_archs
    try:
        flags = _get_cuda_arch_flags()
    finally:
        if saved is None:
            del os.environ["TORCH_CUDA_ARCH_LIST"]
        else:
            os.environ["TORCH_CUDA_ARCH_LIST"] = saved
    out = tmp_path_factory.mktemp("archs")
    source = out / "scale.cu"
    source.write_text("__global__ void scale(float* x, float s) { x[threadIdx.x] *= s; }\n"
                      "void launch(float* x, float s) { scale<<<1, 32>>>(x, s); }\n")
    library = out / "scale.so"
    nvcc = os.path.join(CUDA_HOME or "/usr/local/cuda", "bin", "nvcc")
    subprocess.run([nvcc, "-shared", "-Xcompiler", "-fPIC", *flags, str(source), "-o", str(library)],
                   check=True, capture_output=True, text=True)
    return library


def test_cuobjdump_is_found(built):
    """This toolkit has no cuobjdump: the audit finds the one inside the nvidia-cuda-cuobjdump package."""
    found = load_doctor(built).find_cuobjdump()
    assert found and os.access(found, os.X_OK)
    from torch.utils.cpp_extension import CUDA_HOME

    if not os.path.exists(os.path.join(CUDA_HOME or "/usr/local/cuda", "bin", "cuobjdump")):
        assert "/nvidia/" in found, found


def test_archs_of_the_build(built):
    result = doctor(built, "archs", TORCH_CUDA_ARCH_LIST="9.0", drop=())
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "matrix_op architectures audit: matrix_op/_C.abi3.so against 9.0 (TORCH_CUDA_ARCH_LIST)" in out
    assert "ok    SASS sm_90 (9.0)" in out
    assert "info  the list has no +PTX: GPUs newer than sm_90 cannot run this build" in out
    assert "architectures audit passed" in out


def test_an_arch_that_was_not_built_fails(built):
    result = doctor(built, "archs", "--arch-list", "8.0;9.0")
    assert result.returncode == 1, result.stdout
    (problem,) = fails(result)
    assert "no SASS for sm_80 (8.0 in the list): matrix_op/_C.abi3.so holds SASS sm_90" in problem
    assert '-> rebuild for the list: TORCH_CUDA_ARCH_LIST="8.0;9.0" pip install --no-build-isolation -e .' in problem
    assert "ok    SASS sm_90 (9.0)" in result.stdout and "architectures audit failed" in result.stdout


def test_ptx_that_was_not_built_fails(built):
    result = doctor(built, "archs", "--arch-list", "9.0+PTX")
    assert result.returncode == 1, result.stdout
    (problem,) = fails(result)
    assert "no PTX for compute_90 (9.0+PTX in the list)" in problem


def test_a_name_is_not_an_arch(built):
    result = doctor(built, "archs", "--arch-list", "Hopper;9.0")
    assert result.returncode == 1, result.stdout
    (problem,) = fails(result)
    assert "'Hopper' in the list is not an architecture number" in problem


def test_without_a_list_the_default_list_is_checked(built, default_archs):
    """A one-architecture build is not a release build: against setup.py's list it misses the others."""
    result = doctor(built, "archs")
    assert result.returncode == 1, result.stdout
    assert f"against {default_archs} (setup.py's DEFAULT_ARCH_LIST)" in result.stdout
    missing = [line for line in result.stdout.splitlines() if line.startswith("FAIL")]
    targets, _ = load_doctor(built).arch_targets(default_archs)
    assert len(missing) == sum(1 + (ptx is not None) for _, sass, ptx in targets if sass != "sm_90")
    assert "ok    SASS sm_90 (9.0)" in result.stdout


def test_default_list_holds_ampere_hopper_blackwell_and_ptx_of_the_newest(built, default_archs, default_arch_library):
    """Built with torch's flags for the default list, the library holds SASS for each and PTX for the newest."""
    targets, unread = load_doctor(built).arch_targets(default_archs)
    assert not unread
    assert {"sm_80", "sm_86", "sm_90", "sm_100", "sm_120"} <= {sass for _, sass, _ in targets}
    ptx = [(sass, want) for _, sass, want in targets if want]
    newest = max(targets, key=lambda t: load_doctor(built).arch_sort_key(t[1]))
    assert ptx == [(newest[1], newest[1].replace("sm_", "compute_"))], ptx
    result = doctor(built, "archs", "--library", str(default_arch_library))
    assert result.returncode == 0, result.stdout + result.stderr
    for _, sass, want in targets:
        assert f"ok    SASS {sass} " in result.stdout
    assert f"ok    PTX {newest[1].replace('sm_', 'compute_')} " in result.stdout
    assert "info  also in" not in result.stdout


def test_missing_cuobjdump_says_how_to_get_it(built, monkeypatch, capsys):
    module = load_doctor(built)
    monkeypatch.setattr(module, "find_cuobjdump", lambda: None)
    assert module.main(["archs", "--arch-list", "9.0"]) == 1
    out = capsys.readouterr().out
    assert "FAIL  cuobjdump not found" in out
    assert "-> pip install nvidia-cuda-cuobjdump" in out


@pytest.fixture(scope="module")
def versioned(built_project) -> Path:
    project, build, log = built_project(VERSIONED)
    assert build.returncode == 0, log.read_text()[-5000:]
    return project


@pytest.fixture(scope="module")
def rowwise_stable(built_project) -> Path:
    project, build, log = built_project(ROWWISE_STABLE)
    assert build.returncode == 0, log.read_text()[-5000:]
    return project


@pytest.mark.parametrize("build", ["built", "rowwise_stable"])
def test_abi_of_the_stable_builds(request, build):
    """The default build and the rowwise kind's (both on the stable ABI): no libtorch C++ symbol, and
    every C shim symbol it calls defined by this torch (the floor, in the main suite)."""
    result = doctor(request.getfixturevalue(build), "abi")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ok    no undefined libtorch C++ symbols" in result.stdout
    shim = next(line for line in result.stdout.splitlines() if "undefined symbols of torch's C shim" in line)
    count = int(shim.split()[1])
    assert count > 10, result.stdout
    assert f"defines all {count} shim symbols" in result.stdout, result.stdout


def test_abi_stable_build_fails_where_torch_lacks_a_shim_symbol(built, monkeypatch, capsys):
    module = load_doctor(built)
    monkeypatch.setattr(module, "torch_defines", lambda symbols: ("2.10.0", symbols[:1]))
    assert module.main(["abi"]) == 1
    out = capsys.readouterr().out
    assert "FAIL  torch 2.10.0 does not define 1 of them" in out
    assert "-> install a torch from setup.py's OLDEST_TORCH on" in out


def test_abi_lists_the_libtorch_symbols_of_a_versioned_build(versioned):
    built = versioned
    result = doctor(built, "abi")
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    summary = next(line for line in out.splitlines() if "undefined libtorch C++ symbols" in line)
    count = int(summary.split()[1])
    listed = [line.split(None, 1) for line in out.splitlines() if line.startswith("      ") and "->" not in line]
    assert count == len(listed) and count > 20, out
    assert {namespace for namespace, _ in listed} >= {"c10", "at", "torch"}
    # The registration and the checks call libtorch's C++ API: the kernels' registration, the error type.
    assert any(name.startswith("torch::Library::_impl(") for _, name in listed), out
    assert any(name == "typeinfo for c10::Error" for _, name in listed), out
    assert summary.startswith("info  ") and "runs only with the torch release it was built against" in summary
    assert "ABI audit passed" in out


def test_abi_expect_none_fails_on_a_versioned_build(versioned):
    result = doctor(versioned, "abi", "--expect-none")
    assert result.returncode == 1, result.stdout
    (problem,) = fails(result)
    assert "undefined libtorch C++ symbols" in problem and "none expected" in problem
    assert "stable ABI" in problem


def test_abi_classifies_symbols_by_namespace(versioned, tmp_path, default_arch_library):
    """Only c10::, at::, torch:: (and caffe2::) count: std:: templates over torch types and C shim calls do not."""
    source = tmp_path / "symbols.c"
    undefined = {
        "_ZN2at6native4zeroEv": "at",  # at::native::zero()
        "_ZNK3c106SymInt10toSymNodeEv": "c10",  # a const member
        "_ZN3c10lsERSoNS_10DeviceTypeE": "c10",  # c10::operator<<
        "_ZTVN5torch8autograd4NodeE": "torch",  # a vtable
        "_ZTHN3c104impl26raw_local_dispatch_key_setE": "c10",  # a thread-local's init
        "_ZNSt6vectorIN2at6TensorESaIS1_EE9push_backERKS1_": None,  # std::vector<at::Tensor>::push_back
        "_ZN6atomic4loadEv": None,  # atomic::load(), not at::
        "aoti_torch_empty_strided": None,  # the C shim
    }
    source.write_text("".join(f"extern void {s}(void);\n" for s in undefined)
                      + "void use(void) {" + "".join(f" {s}();" for s in undefined) + " }\n")
    library = tmp_path / "symbols.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    result = doctor(versioned, "abi", "--library", str(library))
    assert result.returncode == 0, result.stdout + result.stderr
    listed = sorted(line.split()[0] for line in result.stdout.splitlines() if line.startswith("      "))
    assert listed == sorted(n for n in undefined.values() if n), result.stdout
    assert "info  5 undefined libtorch C++ symbols (at:: 1, c10:: 3, torch:: 1)" in result.stdout
    assert "info  1 undefined symbols of torch's C shim" in result.stdout
    # A library with no libtorch C++ symbols passes --expect-none: what a stable-ABI build must show.
    result = doctor(versioned, "abi", "--expect-none", "--library", str(default_arch_library))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ok    no undefined libtorch C++ symbols" in result.stdout


def test_no_built_extension(tmp_path, built):
    """Without a build the audits say so and name the build command."""
    (tmp_path / "doctor.py").write_text((built / "doctor.py").read_text())
    (tmp_path / "setup.py").write_text((built / "setup.py").read_text())
    for audit in ("archs", "abi"):
        result = doctor(tmp_path, audit)
        assert result.returncode == 1, result.stdout
        (problem,) = fails(result)
        assert "no built extension (matrix_op/_C*.so)" in problem
        assert "-> build it: pip install --no-build-isolation -e ." in problem


def test_ci_audits_the_build(built):
    """The generated CI runs both audits after each build, and on a build of the default list."""
    workflow = (built / ".github" / "workflows" / "ci.yml").read_text()
    build = workflow.index("pip install --no-build-isolation -e")
    assert workflow.index("python doctor.py archs", build) > build
    assert workflow.index("python doctor.py abi", build) > build
    assert "nvidia-cuda-cuobjdump" in workflow
    default_job = workflow[workflow.index("default-archs:"):]
    assert "TORCH_CUDA_ARCH_LIST" not in default_job.split("steps:")[0]
    assert "python doctor.py archs" in default_job
