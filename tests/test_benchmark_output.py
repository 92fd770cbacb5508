"""The generated benchmark writes what people read: a CSV of every figure and a PNG plot of GB/s
against shape (ours, eager, compile; forward and backward), with the per-call host cost.

Timing needs a GPU; without one, the writers run on figures shaped like the benchmark's own rows,
in the built default project (conftest.built_project, shared with test_build.py). With a GPU the
real benchmark runs on two small shapes and its CSV and PNG are checked.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys

import pytest
import torch
from test_build import BUILT

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

WRITE = """
import sys
sys.path.insert(0, "benchmarks")
import benchmark
rows = []
for dtype in ("float32", "bfloat16"):
    for i, shape in enumerate(("1024x1024", "4096x4096", "8191x8191")):
        for impl in ("scaled_gelu", "eager", "compile"):
            figures = [10.0 + i, 2000.0 + 100 * i, 60.0, 20.0 + i, 1800.0, 55.0, 6.5, 3300.0]
            values = ["scaled_gelu", dtype, shape, impl, *figures, "Test GPU", "2.11.0"]
            rows.append(dict(zip(benchmark.COLUMNS, values, strict=True)))
benchmark.write_csv(rows, sys.argv[1])
benchmark.plot(rows, sys.argv[2])
"""


@pytest.fixture(scope="module")
def project(built_project):
    project, build, log = built_project(BUILT[0])
    assert build.returncode == 0, log.read_text()[-5000:]
    return project


def test_csv_and_png_from_the_benchmark_rows(project, tmp_path):
    pytest.importorskip("matplotlib")
    out_csv, out_png = tmp_path / "bench.csv", tmp_path / "bench.png"
    result = subprocess.run([sys.executable, "-c", WRITE, str(out_csv), str(out_png)], cwd=project,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-5000:]
    rows = list(csv.DictReader(out_csv.open()))
    assert len(rows) == 2 * 3 * 3
    assert list(rows[0]) == ["op", "dtype", "shape", "impl", "fwd_us", "fwd_gbs", "fwd_pct_copy", "bwd_us", "bwd_gbs",
                             "bwd_pct_copy", "host_us", "copy_gbs", "device", "torch"]
    assert {row["impl"] for row in rows} == {"scaled_gelu", "eager", "compile"}
    data = out_png.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 20_000
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1200, 700)  # two dtypes: two rows of forward | backward panels


def test_plot_without_matplotlib_names_the_extra(project, tmp_path):
    script = ("import sys; sys.modules['matplotlib'] = None; sys.path.insert(0, 'benchmarks'); "
              "import benchmark; benchmark.plot([], sys.argv[1])")
    result = subprocess.run([sys.executable, "-c", script, str(tmp_path / "x.png")], cwd=project,
                            capture_output=True, text=True)
    assert result.returncode != 0
    assert "pip install '.[plot]'" in result.stderr, result.stderr


def test_help_lists_csv_and_plot(project):
    # The README runs it after `pip install -e .`; here the package is built in place.
    result = subprocess.run([sys.executable, "benchmarks/benchmark.py", "--help"], cwd=project,
                            capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(project)})
    assert result.returncode == 0, result.stderr
    assert "--csv" in result.stdout and "--plot" in result.stdout and "host cost" in result.stdout
    assert "--rounds" in result.stdout
    assert "torch.compile's is higher" in result.stdout  # the closing lines, described in --help


@pytest.mark.parametrize("flag", ["--rounds", "--replays"])
def test_a_count_below_one_is_refused_before_anything_runs(project, flag):
    result = subprocess.run([sys.executable, "benchmarks/benchmark.py", flag, "0"], cwd=project,
                            capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(project)})
    assert result.returncode == 2, result.stderr
    assert "--rounds and --replays must be at least 1" in result.stderr, result.stderr


@pytest.mark.skipif(not torch.cuda.is_available(), reason="times kernels: needs a CUDA GPU")
def test_benchmark_runs_and_writes_its_outputs(project, tmp_path):
    pytest.importorskip("matplotlib")
    out_csv, out_png = tmp_path / "bench.csv", tmp_path / "bench.png"
    result = subprocess.run([sys.executable, "benchmarks/benchmark.py", "--dtype", "float32", "--shape", "1024x1024",
                             "--shape", "333x4097", "--replays", "5", "--rounds", "2", "--csv", str(out_csv), "--plot", str(out_png)],
                            cwd=project, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(project)})
    assert result.returncode == 0, (result.stdout + result.stderr)[-5000:]
    assert "host cost per forward call" in result.stdout
    rows = list(csv.DictReader(out_csv.open()))
    assert [(row["shape"], row["impl"]) for row in rows] == [
        (shape, impl) for shape in ("1024x1024", "333x4097") for impl in ("scaled_gelu", "eager", "compile")]
    assert all(float(row[key]) > 0 for row in rows for key in ("fwd_gbs", "bwd_gbs", "host_us"))
    assert out_png.read_bytes().startswith(PNG_MAGIC)
    assert "scaled_gelu: >= 90 % of copy bandwidth in " in result.stdout
    assert "torch.compile ahead of scaled_gelu in " in result.stdout


SUMMARY = """
import sys
sys.path.insert(0, "benchmarks")
import benchmark
def row(dtype, shape, impl, fwd, bwd):
    figures = [1.0, 1.0, fwd, 1.0, 1.0, bwd, 1.0, 3000.0]
    values = ["scaled_gelu", dtype, shape, impl, *figures, "Test GPU", "2.11.0"]
    return dict(zip(benchmark.COLUMNS, values, strict=True))
rows = [
    row("float32", "1024x1024", "scaled_gelu", 98.04, 101.2),
    row("float32", "1024x1024", "eager", 50.0, 60.0),
    row("float32", "1024x1024", "compile", 98.0, 101.3),    # level forward (as printed), ahead backward
    row("bfloat16", "8191x8191", "scaled_gelu", 89.94, 90.0),  # 89.9 is below 90, 90.0 is not
    row("bfloat16", "8191x8191", "eager", 40.0, 40.0),
    row("bfloat16", "8191x8191", "compile", 95.0, 80.0),
]
print("\\n".join(benchmark.summary(rows, "scaled_gelu")))
"""


def test_closing_lines_count_the_target_and_name_where_compile_leads(project):
    result = subprocess.run([sys.executable, "-c", SUMMARY], cwd=project, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-5000:]
    assert result.stdout.splitlines() == [
        "scaled_gelu: >= 90 % of copy bandwidth in 3 of 4 figures; below: bfloat16 8191x8191 fwd 89.9",
        "torch.compile ahead of scaled_gelu in 2 of 4 figures: float32 1024x1024 bwd 101.2 < 101.3, "
        "bfloat16 8191x8191 fwd 89.9 < 95.0",
    ]
