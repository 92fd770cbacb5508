"""The starter op's own tests: what is particular to scale * gelu(x). The generic tests (test_ops.py,
test_properties.py ...) cover every op from its declaration; when you turn the starter into your op,
delete this file or replace its tests with your op's own."""

from __future__ import annotations

import pytest
import torch
from support import DEVICES, DTYPES, OPS, check_backward, check_forward, function

OP = OPS["scaled_gelu"]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("device", DEVICES)
def test_saturates_far_from_zero(device, dtype):
    """gelu(x) -> x for large x and -> 0 for large -x, with gradients 1 and 0: the logistic's exp
    over- and underflows there, which must give those limits, not nan."""
    x = torch.tensor([-1e4, -300.0, -30.0, -8.0, 8.0, 30.0, 300.0, 1e4]).to(device=device, dtype=dtype)
    check_forward(OP, [x], {"scale": 1.5})
    check_backward(OP, [x], {"scale": 1.5})
    y = function(OP)(x, 1.5)
    assert torch.isfinite(y).all()


@pytest.mark.parametrize("device", DEVICES)
def test_nan_and_inf_propagate(device):
    x = torch.tensor([float("nan"), float("inf"), -float("inf"), 1.0], device=device)
    y = function(OP)(x, 2.0)
    assert y[0].isnan() and y[1] == float("inf") and y[3].isfinite()


@pytest.mark.parametrize("device", DEVICES)
def test_scale_zero_gives_zeros(device):
    x = torch.randn(1000, device=device)
    assert torch.equal(function(OP)(x, 0.0), torch.zeros_like(x))
