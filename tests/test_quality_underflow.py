"""The per-element share of the GradScaler check (issue 52, finding 6): a gradient whose
elements flush in float16 while carrying almost none of its norm is seen, and the scale that
lifts them above float16's smallest normal is seen to keep them."""

import math

import torch

from bench.quality import underflow


def test_elements_below_float16s_smallest_normal_are_counted_with_and_without_the_scale():
    # 90 of 100 non-zero elements at 1e-6 (below 2**-14), 10 at 1.0: the old norm share saw
    # ~0.03% lost, yet 90% of the elements Adam updates one by one flush or turn subnormal.
    g = torch.cat([torch.full((90,), 1e-6), torch.ones(10), torch.zeros(5)])
    shares = underflow.element_shares(g, scale=2.0**16)
    assert shares["flushed_unscaled"] == 0.9
    assert shares["flushed_scaled"] == 0.0
    norm_share = (g[:90].norm() / g.norm()).item()
    assert norm_share < 0.01  # the norm share alone would have passed it


def test_an_all_zero_gradient_has_no_share():
    shares = underflow.element_shares(torch.zeros(4), scale=1.0)
    assert math.isnan(shares["flushed_unscaled"])
