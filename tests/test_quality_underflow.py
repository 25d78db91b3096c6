"""The per-element shares of the GradScaler check and the one rule for what float16 does to a
float32 value (`bench.numerics.measure.fp16`, `bench.numerics.measure.underflow`): flushed to zero
is lost, subnormal is kept at reduced precision; the rule's edges against float16's own cast."""

import math

import pytest
import torch

from bench.numerics.measure import fp16
from bench.numerics.measure.underflow import census, fp16_cast_shares, norm_share
from bench.quality.train import element_shares

EDGES = [
    2.0**-26,
    2.0**-25 * (1 - 2.0**-20),
    2.0**-25,  # the tie: rounds to even, zero
    2.0**-25 * (1 + 2.0**-20),  # just above: the smallest subnormal
    2.0**-24,
    3 * 2.0**-25,  # a tie between 2**-24 (odd mantissa) and 2**-23 (even): up
    2.0**-14 - 2.0**-24,  # the largest subnormal
    2.0**-14 - 2.0**-25 * (1 + 2.0**-10),  # under the tie: the largest subnormal
    2.0**-14 - 2.0**-25,  # the tie: rounds to 2**-14, normal
    2.0**-14 - 2.0**-25 * (1 - 2.0**-10),
    2.0**-14,
    1.0,
]


def test_the_rule_for_zero_and_subnormal_is_float16s_own_cast_at_every_edge():
    values = torch.tensor(EDGES, dtype=torch.float32)
    values = torch.cat([values, -values])
    h = values.half()
    for v, cast in zip(values.tolist(), h.tolist(), strict=True):
        one = fp16_cast_shares(torch.tensor([v]))
        assert one["zero"] == float(cast == 0), v
        assert one["subnormal"] == float(cast != 0 and abs(cast) < 2.0**-14), v
    # On random magnitudes across the whole range as well.
    g = torch.exp2(
        torch.empty(100_000).uniform_(-30, -10, generator=torch.Generator().manual_seed(0))
    )
    h = g.half()
    shares = fp16_cast_shares(g)
    assert shares["zero"] == int((h == 0).sum()) / g.numel()
    subnormal = (h != 0) & (h.abs() < 2.0**fp16.SMALLEST_NORMAL_LOG2)
    assert shares["subnormal"] == int(subnormal.sum()) / g.numel()
    assert shares["zero"] > 0.1 and shares["subnormal"] > 0.1  # the test sees both


def test_the_norm_share_is_the_norm_of_the_flushed_elements_over_the_whole():
    # Norms 3 (flushed) of 5 (whole): 0.6, not its square 0.36.
    ref = torch.tensor([3.0, 4.0, 0.0])
    assert norm_share(ref, torch.tensor([True, False, False])) == pytest.approx(0.6)
    assert math.isnan(norm_share(torch.zeros(3), torch.ones(3, dtype=torch.bool)))


def test_many_tiny_elements_that_flush_are_counted_apart_from_their_norm_share():
    # 90 of 100 non-zero elements at 1e-8 (below 2**-25: they flush), 10 at 1.0; and the scale
    # lifts them into float16's range. 90% of the elements, 0.003% of the norm (1e-8·√90 / √10).
    g = torch.cat([torch.full((90,), 1e-8), torch.ones(10), torch.zeros(5)])
    shares = element_shares(g, scale=2.0**16)
    assert shares["zero_unscaled"] == 0.9 and shares["subnormal_unscaled"] == 0.0
    assert shares["zero_scaled"] == 0.0 and shares["subnormal_scaled"] == 0.0
    assert fp16_cast_shares(g)["zero_norm"] == pytest.approx(1e-8 * math.sqrt(9), rel=1e-4)


def test_subnormal_elements_are_kept_not_flushed():
    # 1e-6 is above 2**-25 and below 2**-14: a float16 subnormal, kept at reduced precision.
    g = torch.cat([torch.full((90,), 1e-6), torch.ones(10)])
    shares = element_shares(g, scale=1.0)
    assert shares["zero_unscaled"] == 0.0 and shares["subnormal_unscaled"] == 0.9
    assert g.half()[:90].ne(0).all()  # the cast agrees: none of them is zero


def test_the_census_records_the_norm_share_its_float16_gradient_flushed():
    ref = torch.tensor([3.0, 4.0, 1e-9, 0.0])
    g = ref.half()  # 1e-9 flushes; the rest is kept
    row = census(g, ref)
    assert row["flushed"] == 0.25
    assert row["flushed_norm"] == pytest.approx(1e-9 / math.sqrt(25 + 1e-18))


def test_an_all_zero_gradient_has_no_share():
    shares = element_shares(torch.zeros(4), scale=1.0)
    assert math.isnan(shares["zero_unscaled"]) and math.isnan(shares["subnormal_unscaled"])
