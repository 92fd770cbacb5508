"""torch.library.opcheck: schema, fake kernels, autograd registration and AOT dispatch of both ops."""

from __future__ import annotations

import pytest
import torch
from support import DEVICES, DTYPES, SCALE, random_input  # support imports the package: the ops are registered

OPS = torch.ops.cuop_my_cuda_op


@pytest.mark.parametrize("requires_grad", [False, True])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("device", DEVICES)
def test_opcheck_forward(device, dtype, requires_grad):
    x = random_input((13, 67), dtype, device).requires_grad_(requires_grad)
    torch.library.opcheck(OPS.scaled_gelu_fwd.default, (x, SCALE))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("device", DEVICES)
def test_opcheck_backward(device, dtype):
    grad_out = random_input((13, 67), dtype, device, std=1.0)
    saved = random_input((13, 67), dtype, device)
    torch.library.opcheck(OPS.scaled_gelu_bwd.default, (grad_out, saved, SCALE))
