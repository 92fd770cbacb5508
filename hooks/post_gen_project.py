"""Print the next steps after a project is generated.

Nothing is tidied here: files the answers did not choose are never written (their template names
render to an empty string and cookiecutter skips them), and the generator's tests check that no
combination of answers leaves an empty file or folder behind.
"""

from __future__ import annotations

import json
import sys

ANSWERS_JSON = r"""{{ cookiecutter | tojson }}"""


def next_steps(answers: dict) -> str:
    slug, package, op = answers["project_slug"], answers["package_name"], answers["op_name"]
    change = f"The op is declared in {package}/ops/{op}.py, its math is in csrc/ops/{op}.h"
    return f"""
Created {slug}/ with the op {package}.{op}.

Next steps:
  cd {slug}
  python doctor.py                                    # checks torch, nvcc, ninja and the GPU; names each fix
  pip install ninja pytest                            # build and test tools
  pip install --no-build-isolation -e '.[test]'       # builds csrc/ against your installed torch
  pytest                                              # CUDA tests skip where there is no GPU
  python benchmarks/benchmark.py                      # GB/s against eager PyTorch and torch.compile

{change}; README.md explains the layout.
"""


def main() -> int:
    answers = json.loads(ANSWERS_JSON)
    print(next_steps(answers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
