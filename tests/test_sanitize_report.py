"""scripts/sanitize.py reads compute-sanitizer's reports: errors counted, each given to its kernel
and to the case that ran, a fault that ended the process noticed. (The sanitizer itself runs on a GPU machine:
reference_ops/tests/test_sanitizer.py and tests/test_sanitize_projects.py.)"""

from __future__ import annotations

import sanitize

STAGED_SPAN_READ = """\
========= COMPUTE-SANITIZER
CASES 3
CASE 0 START layer_norm: few rows
CASE 0 OK layer_norm: few rows
CASE 1 START layer_norm: staged backward, span rows
========= Invalid __global__ read of size 16 bytes
=========     at reference_ops::cuda::cp_async_16(void *, const void *, int)+0x1300 in norm_common.cuh:594
=========     by thread (510,0,0) in block (23,0,0)
=========     Access to 0x7f5d2c954800 is out of bounds
=========         Device Frame: void reference_ops::cuda::<unnamed>::norm_bwd_staged_kernel<c10::Half, c10::Half, (int)4, (bool)1, (bool)0>(const T1 *, long)+0xd20 in norm_bwd.cu:509
=========
========= Invalid __global__ read of size 16 bytes
=========     at T2 reference_ops::cuda::load_param<T1>(const T1 *)+0x10 in norm_common.cuh:268
=========         Device Frame: void reference_ops::cuda::<unnamed>::span_param_table_kernel<float, (int)4>(const T1 *, const T1 *, int, int)+0x2b0 in norm_fwd.cu:519
=========
========= Program hit cudaErrorLaunchFailure (error 719) due to "unspecified launch failure" on CUDA API call to cudaGetLastError.
=========     Saved host backtrace up to driver entry point at error
=========
========= ERROR SUMMARY: 3 errors
"""


def test_errors_are_counted_and_given_to_their_kernel_and_case():
    run = sanitize.Run("reference_ops", "memcheck-exact")
    sanitize.parse(STAGED_SPAN_READ, run)
    assert run.errors == 3
    assert run.by_family == {
        "norm_bwd_staged_kernel": 1,
        "span_param_table_kernel": 1,
        "(CUDA API errors after a fault)": 1,
    }
    assert run.by_case == {"layer_norm: staged backward, span rows": 3}


def test_a_clean_racecheck_summary_counts_hazards():
    run = sanitize.Run("reference_ops", "racecheck")
    sanitize.parse("========= RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)\n", run)
    assert (run.errors, run.warnings, run.ok) == (1, 1, True)
    missing = sanitize.Run("reference_ops", "memcheck")
    sanitize.parse("Traceback (most recent call last):\n", missing)
    assert not missing.ok, "a run without a sanitizer summary must not pass as clean"


def test_kernels_are_named_as_the_report_names_them():
    frame = ("void reference_ops::cuda::<unnamed>::norm_fwd_rows_kernel<c10::BFloat16, c10::BFloat16, "
             "(reference_ops::FwdVariant)1, (reference_ops::Norm)0, (int)2>(const T1 *, long)+0x10")
    assert sanitize.families_in(frame) == ["norm_fwd_rows_kernel"]
    assert sanitize.families_in("no kernel here") == []


def test_the_cases_that_ran_are_counted_when_a_run_stops_at_its_deadline():
    run = sanitize.Run("sweep rms_norm:float32:float32 [512:1024]", "memcheck")
    log = (
        "CASES 2048\n"
        "CASE 512 START rms_norm 5x1 float32 weight\nCASE 512 OK rms_norm 5x1 float32 weight\n"
        "CASE 513 START rms_norm 5x1 float32 weight offset 1\nCASE 513 FAILED rms_norm 5x1: AssertionError\n"
        "DEADLINE before case 514\n1 passed, 1 failed\n========= ERROR SUMMARY: 0 errors\n"
    )
    sanitize.parse(log, run)
    assert (run.ran, run.errors, len(run.failed_cases)) == (2, 0, 1)
