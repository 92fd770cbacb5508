#!/usr/bin/env bash
# Creates (or updates) the virtual environment .venv with everything in requirements-dev.txt, after
# checking that nvcc is there and matches the CUDA major version of torch from PyPI.
#   bash scripts/bootstrap.sh          # VENV=path and PYTHON=python3.x override the defaults
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=${VENV:-$root/.venv}
python=${PYTHON:-python3}
cuda_major_wanted=13

if ! command -v nvcc >/dev/null; then
  cuda_home=${CUDA_HOME:-/usr/local/cuda}
  if [ -x "$cuda_home/bin/nvcc" ]; then
    export PATH="$cuda_home/bin:$PATH"
  else
    echo "ERROR: nvcc not found: install the CUDA Toolkit $cuda_major_wanted.x and put nvcc on PATH (or set CUDA_HOME)" >&2
    exit 1
  fi
fi
cuda_major=$(nvcc --version | sed -n 's/.*release \([0-9]*\)\..*/\1/p')
if [ "$cuda_major" != "$cuda_major_wanted" ]; then
  echo "ERROR: nvcc is CUDA $cuda_major, but torch from PyPI (requirements-dev.txt) is built with CUDA $cuda_major_wanted;" \
       "install CUDA Toolkit $cuda_major_wanted.x or put its nvcc first on PATH" >&2
  exit 1
fi

if [ ! -x "$venv/bin/python" ]; then
  echo "Creating $venv"
  "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$root/requirements-dev.txt"
