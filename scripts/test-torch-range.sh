#!/usr/bin/env bash
# Builds and tests against the ends of the supported torch range, each in its own virtual
# environment under .torch-range/ (CI runs `newest` through .ci/run):
#   newest  the newest torch on the package index (`pip install --upgrade torch`)
#   oldest  the floor that reference_ops/pyproject.toml declares (torch>=X: torch==X)
# For each: reference_ops built with its CUDA kernels and its tests run, then the generator's tests
# that build a project (pytest -m "built and not template_change": a generated project of each
# registration style rendered, built and its own suite run, its wheel, sdist, audits and benchmark).
# nvcc builds sm_90 code (TORCH_CUDA_ARCH_LIST); without a GPU the CUDA tests skip.
#   bash scripts/test-torch-range.sh [newest|oldest|both] [install]   # default: newest
# `install` only creates the environments (CI downloads the newest torch while the floor's tests run).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
python=${PYTHON:-python3}
ends=${1:-newest}
case "$ends" in
  newest|oldest) ;;
  both) ends="oldest newest" ;;
  *) echo "usage: bash scripts/test-torch-range.sh [newest|oldest|both] [install]" >&2; exit 2 ;;
esac
case "${2:-}" in
  ""|install) ;;
  *) echo "usage: bash scripts/test-torch-range.sh [newest|oldest|both] [install]" >&2; exit 2 ;;
esac
command -v nvcc >/dev/null || export PATH="${CUDA_HOME:-/usr/local/cuda}/bin:$PATH"
command -v nvcc >/dev/null || { echo "ERROR: nvcc not found: install the CUDA Toolkit 13.x" >&2; exit 1; }
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}
export MAX_JOBS=${MAX_JOBS:-$(nproc)}
floor=$(sed -n 's/^dependencies = \["torch>=\([0-9.]*\)".*/\1/p' "$root/reference_ops/pyproject.toml")
[ -n "$floor" ] || { echo "ERROR: no torch>=X in reference_ops/pyproject.toml dependencies" >&2; exit 1; }

for end in $ends; do
  dir=$root/.torch-range/$end
  venv=$dir/venv
  if [ "$end" = newest ]; then spec=torch; else spec="torch==$floor"; fi
  echo "== torch $end ($spec): $venv"
  start=$SECONDS
  [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
  pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check)
  # torch and the build tools only: reference_ops' own `test` extra must bring what its tests
  # import (in CI this venv is new, so a missing entry fails here).
  "${pip[@]}" --upgrade "$spec" ninja "$(grep '^setuptools' "$root/requirements-dev.txt")" wheel
  [ "${2:-}" = install ] && { echo "installed in $((SECONDS - start)) s"; continue; }
  echo "installed in $((SECONDS - start)) s"
  "$venv/bin/python" -c 'import torch; print(f"torch {torch.__version__} (CUDA {torch.version.cuda})")'
  nvcc --version | sed -n 's/.*release \([0-9.]*\),.*/nvcc: CUDA \1/p'

  echo "== reference_ops against torch $end"
  rm -rf "$dir/reference_ops"
  mkdir -p "$dir/reference_ops"
  # A copy, so the build in reference_ops/ that .venv imports is left alone.
  tar -C "$root/reference_ops" --exclude=build --exclude='*.so' --exclude='*.egg-info' \
      --exclude=__pycache__ --exclude=.hypothesis -cf - . | tar -C "$dir/reference_ops" -xf -
  start=$SECONDS
  "${pip[@]}" --no-build-isolation -e "$dir/reference_ops[test]"
  echo "reference_ops built in $((SECONDS - start)) s"
  start=$SECONDS
  (cd "$dir/reference_ops" && "$venv/bin/python" -m pytest tests -q -p no:cacheprovider -ra)
  echo "reference_ops tested in $((SECONDS - start)) s"

  echo "== generator tools (requirements-dev.txt) for the generated projects"
  "${pip[@]}" -r <(grep -v '^torch\b' "$root/requirements-dev.txt")

  echo "== generated projects against torch $end: the generator's tests that build one"
  start=$SECONDS
  (cd "$root" && "$venv/bin/python" -m pytest tests -m "built and not template_change" -p no:cacheprovider -ra \
      --durations=10)
  echo "generated projects built and tested in $((SECONDS - start)) s"
done
