#!/usr/bin/env bash
# On a GPU machine: build reference_ops for the local GPU, run its whole test suite, then the
# benchmark. Logs, bench.csv and bench.png go to $OUT (default ./gpu-logs).
#   bash benchmarks/gpu_run.sh [benchmark arguments]      e.g. --dtypes bf16 --no-compile
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${OUT:-$PWD/gpu-logs}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$out/gpu.txt"
export MAX_JOBS=${MAX_JOBS:-$(nproc)}
# Some GPU images default to a compiler that links libstdc++ statically (docs/template.md).
if [ -x /usr/bin/g++ ]; then export CXX=/usr/bin/g++ CC=/usr/bin/gcc CUDAHOSTCXX=/usr/bin/g++; fi
start=$(date +%s)
if ! python3 setup.py build_ext --inplace >"$out/build.log" 2>&1; then
  tail -40 "$out/build.log"
  exit 1
fi
echo "build: $(($(date +%s) - start)) s"
python3 -m pytest tests -q -p no:cacheprovider ${PYTEST_ARGS:-} >"$out/tests.log" 2>&1
tests_rc=$?
tail -15 "$out/tests.log"
python3 benchmarks/bench.py --out "$out" "$@" 2>&1 | tee "$out/bench.log" | grep -v '^\['
bench_rc=${PIPESTATUS[0]}
echo "tests exit $tests_rc, benchmark exit $bench_rc"
exit $((tests_rc | bench_rc))
