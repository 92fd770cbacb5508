#!/usr/bin/env bash
# Runs the whole test suite (command 2 of the README; CI runs it through .ci/run):
# the generator's tests (every combination rendered and compiled, the hooks, real builds of a few
# projects and their own tests) and reference_ops, built with its CUDA kernels and tested.
#   bash scripts/test.sh [pytest arguments]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/bootstrap.sh"
command -v nvcc >/dev/null || export PATH="${CUDA_HOME:-/usr/local/cuda}/bin:$PATH"
python=${VENV:-$root/.venv}/bin/python
# One architecture keeps the builds short; set TORCH_CUDA_ARCH_LIST to build for others.
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}
export MAX_JOBS=${MAX_JOBS:-$(nproc)}

echo "== Building reference_ops (TORCH_CUDA_ARCH_LIST=$TORCH_CUDA_ARCH_LIST)"
"$python" -m pip install --quiet --no-build-isolation --no-deps -e "$root/reference_ops"
echo "== Running the tests"
cd "$root"
exec "$python" -m pytest tests reference_ops/tests "$@"
