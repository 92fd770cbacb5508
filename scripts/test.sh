#!/usr/bin/env bash
# Runs the whole test suite (command 2 of the README): the generator's tests (every combination
# rendered and compiled, the hooks, real builds of a few projects and their own tests) and
# reference_ops, built with its CUDA kernels and tested, all against the pinned torch (the floor).
#   bash scripts/test.sh [pytest arguments]
#   bash scripts/test.sh --every-change [pytest arguments]
# --every-change is CI's part on the floor (.ci/run): the tests that build nothing (pytest -m "not built
# and not template_change"). CI builds reference_ops and the `built` projects against the newest torch
# (scripts/test-torch-range.sh newest); the `template_change` tests run here without the flag and on
# a GPU machine (docs/template.md, "What runs where").
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/bootstrap.sh"
command -v nvcc >/dev/null || export PATH="${CUDA_HOME:-/usr/local/cuda}/bin:$PATH"
python=${VENV:-$root/.venv}/bin/python
# One architecture keeps the builds short; set TORCH_CUDA_ARCH_LIST to build for others.
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}
export MAX_JOBS=${MAX_JOBS:-$(nproc)}

cd "$root"
if [ "${1:-}" = --every-change ]; then
  shift
  echo "== Running the tests that build nothing"
  exec "$python" -m pytest tests -m "not built and not template_change" "$@"
fi
echo "== Building reference_ops (TORCH_CUDA_ARCH_LIST=$TORCH_CUDA_ARCH_LIST)"
"$python" -m pip install --quiet --no-build-isolation --no-deps -e "$root/reference_ops"
echo "== Running the tests"
exec "$python" -m pytest tests reference_ops/tests "$@"
