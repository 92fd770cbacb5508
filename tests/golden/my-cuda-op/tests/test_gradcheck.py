"""gradcheck in float64: the analytic backward against finite differences of the forward kernel."""

from __future__ import annotations

import pytest
import torch
from support import DEVICES, SCALE, op, random_input, shape_id


@pytest.mark.parametrize("shape", [(5,), (3, 7), (2, 3, 9)], ids=shape_id)
@pytest.mark.parametrize("device", DEVICES)
def test_gradcheck(device, shape):
    x = random_input(shape, torch.float64, device, std=1.0).requires_grad_()
    assert torch.autograd.gradcheck(lambda t: op(t, SCALE), (x,))
