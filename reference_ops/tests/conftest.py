import os
import sys

# Run from the repository root, the project folder reference_ops/ would be imported as
# a namespace package and hide the real package inside it: put the project folder first.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pytest  # noqa: E402


def _set_compiled_path(kernels: bool) -> None:
    import torch

    import reference_ops

    torch._dynamo.reset()
    reference_ops.keep_kernels_when_compiled(kernels)


@pytest.fixture
def kernels_when_compiled():
    """Compiled graphs call the ops' kernels (reference_ops.keep_kernels_when_compiled) in this test."""
    _set_compiled_path(True)
    yield
    _set_compiled_path(False)


@pytest.fixture(params=["math", "kernels"])
def compiled_path(request):
    """Both things a compiled graph can hold: the ops' math (the default) and the kernels."""
    _set_compiled_path(request.param == "kernels")
    yield request.param
    _set_compiled_path(False)
