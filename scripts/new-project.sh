#!/usr/bin/env bash
# Renders a new op project from this template and builds it (command 1 of the README).
#   bash scripts/new-project.sh [--output-dir DIR] [-f] [--replay] [--no-build] [key=value ...]
# In a terminal cookiecutter asks each question; otherwise it takes the defaults and any key=value.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/bootstrap.sh"
command -v nvcc >/dev/null || export PATH="${CUDA_HOME:-/usr/local/cuda}/bin:$PATH"
exec "${VENV:-$root/.venv}/bin/python" "$root/scripts/new_project.py" "$@"
