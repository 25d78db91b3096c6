"""The equivalence test's two sides (`bench.verdicts.training`): an interval of the gap that
crosses either edge of the margin is undecided, whichever edge it crosses. Fixtures built here."""

import pandas as pd
import pytest

from bench.verdicts import training as rules

M = 0.01
"""The margin of these intervals (a gap in loss units)."""


@pytest.mark.parametrize(
    ("low", "high"),
    [
        (-0.02, 0.005),  # crosses −margin only, holds zero, stays under +margin
        (-0.015, -0.002),  # crosses −margin only, excludes zero
        (-0.005, 0.02),  # crosses +margin only: the side other tests pin
        (-0.02, 0.02),  # crosses both
    ],
)
def test_an_interval_that_crosses_either_edge_of_the_margin_is_not_known(low, high):
    assert rules.classify(low, high, M) == rules.NOT_KNOWN


def test_an_interval_inside_both_edges_is_within_and_one_past_an_edge_is_decided():
    assert rules.classify(-0.005, 0.005, M) == rules.LIKE
    assert rules.classify(-0.009, -0.001, M) == rules.WITHIN_BETTER
    assert rules.classify(0.001, 0.009, M) == rules.WITHIN_WORSE
    assert rules.classify(-0.03, -0.011, M) == rules.BETTER
    assert rules.classify(0.011, 0.03, M) == rules.WORSE


def _study(x: list[float]) -> pd.DataFrame:
    """fp32 and a mode with best losses `x`, three seeds each, all learned (4.2 at step 0)."""
    rows = [
        {"mode": mode, "seed": seed, "initial_loss": 4.2, "best_loss": best, "final_loss": best,
         "status": "ok", "diverged_at_step": float("nan")}
        for mode, losses in (("fp32", [1.500, 1.501, 1.499]), ("x", x))
        for seed, best in enumerate(losses)
    ]  # fmt: skip
    return pd.DataFrame(rows)


def test_a_mode_whose_interval_crosses_only_the_lower_edge_does_not_train_like_fp32():
    # fp32's mean 1.5, margin 0.015. The mode's seeds 1.478–1.496 (mean 1.487, gap −0.013) with
    # a spread that puts the interval's low end past −0.015 and its high end under +0.015.
    df = _study([1.478, 1.496, 1.487])
    v = rules.trains_like_fp32(df, "x", synthetic=False)
    assert v.low < -v.margin < v.high < v.margin  # the fixture is the case it names
    assert v.verdict == rules.NOT_KNOWN and "crosses the margin" in v.reason
