"""Counted FLOPs of convolutions against hand counts: grouped and depthwise backwards (which
torch's own formula counts as dense), dense and transposed ones (where it is right)."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.flop_counter import FlopCounterMode

from bench.measure import flops


def fwd_bwd(conv: nn.Module, x: torch.Tensor, ours: bool = True) -> tuple[int, int]:
    """(forward, backward) FLOPs of `conv(x)`, by our formulas or by torch's alone. The input's
    gradient is computed, and counted, only where `x` requires grad."""
    mapping = flops.FORMULAS if ours else None
    with FlopCounterMode(display=False, custom_mapping=mapping) as counter:
        out = conv(x)
        fwd = counter.get_total_flops()
        out.sum().backward()
        return fwd, counter.get_total_flops() - fwd


def test_depthwise_backward_is_twice_forward_not_65_times():
    conv = nn.Conv2d(64, 64, 7, padding=3, groups=64)
    x = torch.randn(4, 64, 32, 32)
    # 2 · N · C_out · out pixels · C_in/groups · kernel taps
    forward = 2 * 4 * 64 * (32 * 32) * 1 * 49
    assert forward == 25_690_112
    # Weight gradient only (torch's formula counted it 64 times over: 1,644,167,168).
    assert fwd_bwd(conv, x) == (forward, forward)
    # Input and weight gradients (torch's formula: 1,669,857,280).
    assert fwd_bwd(conv, x.requires_grad_()) == (forward, 2 * forward)


def test_grouped_backward_is_twice_forward():
    conv = nn.Conv2d(16, 8, 3, stride=2, padding=1, groups=4)
    x = torch.randn(2, 16, 8, 8, requires_grad=True)
    forward = 2 * 2 * 8 * (4 * 4) * (16 // 4) * 9  # 8×8 at stride 2 -> 4×4
    assert forward == 18_432
    assert fwd_bwd(conv, x) == (forward, 2 * forward)


@pytest.mark.parametrize("input_grad", [True, False])
@pytest.mark.parametrize(
    ("conv", "shape"),
    [
        (nn.Conv2d(6, 10, 3, padding=1), (2, 6, 8, 8)),
        (nn.Conv1d(4, 6, 5, stride=2, dilation=2), (3, 4, 20)),
        (nn.ConvTranspose2d(8, 6, 3, stride=2, output_padding=1), (2, 8, 5, 5)),
    ],
)
def test_groups_1_counts_as_torch_does(conv, shape, input_grad):
    x = torch.randn(shape, requires_grad=input_grad)
    assert fwd_bwd(conv, x) == fwd_bwd(conv, x, ours=False)


def test_dense_and_transposed_by_hand():
    dense = nn.Conv2d(6, 10, 3, padding=1)
    forward = 2 * 2 * 10 * (8 * 8) * 6 * 9
    assert forward == 138_240
    assert fwd_bwd(dense, torch.randn(2, 6, 8, 8, requires_grad=True)) == (forward, 2 * forward)
    # A transposed convolution's work is per *input* pixel: 2 · N · C_in · in pixels · C_out/groups
    # · kernel taps, with groups=2 (where torch's backward counted 3× forward).
    transposed = nn.ConvTranspose2d(8, 6, 3, stride=2, groups=2)
    forward = 2 * 2 * 8 * (5 * 5) * (6 // 2) * 9
    assert forward == 21_600
    x = torch.randn(2, 8, 5, 5, requires_grad=True)
    assert fwd_bwd(transposed, x) == (forward, 2 * forward)


def test_count_of_a_model_with_grouped_convolutions():
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(8, 8, 7, padding=3, groups=8),  # depthwise
        nn.ReLU(),
        nn.Conv2d(8, 16, 1, groups=4),
    )
    x, y = torch.randn(2, 3, 8, 8), torch.randn(2, 16, 8, 8)
    fwd = {
        "0": 2 * 2 * 8 * 64 * 3 * 9,  # 55,296
        "2": 2 * 2 * 8 * 64 * 1 * 49,  # 100,352
        "4": 2 * 2 * 16 * 64 * 2 * 1,  # 8,192
    }
    counted = flops.count(model, (x, y), F.mse_loss)
    assert counted["fwd_flop_by_module"] == fwd
    assert counted["fwd_flop"] == 163_840
    # `count` asks for the parameters' gradients only: the first convolution computes no input
    # gradient (1× forward), every later one both gradients (2× forward). The loss counts zero.
    assert counted["bwd_flop_by_module"] == {"0": fwd["0"], "2": 2 * fwd["2"], "4": 2 * fwd["4"]}
    assert counted["bwd_flop"] == 272_384
