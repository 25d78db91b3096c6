"""The memory verdict (`bench.verdicts.memory`) on hand-made rounds: a rise, a fall, a change
within the tolerance, rounds that do not repeat, and sides without the columns."""

from __future__ import annotations

import math

import pytest

from bench.verdicts import memory
from bench.verdicts.memory import Tolerance, judge


def rounds(peak: float, n: int = 3, *, fwd=None, bwd=None, opt=None, **more) -> list[dict]:
    """`n` rounds of one peak (GiB), with the phase peaks where given."""
    one = {"peak_alloc_gib": peak, "peak_reserved_gib": peak + 0.5, **more}
    for col, value in (("peak_fwd_gib", fwd), ("peak_bwd_gib", bwd), ("peak_opt_gib", opt)):
        if value is not None:
            one[col] = value
    return [dict(one) for _ in range(n)]


def test_a_rise_beyond_the_tolerance_is_more_memory_with_its_size_and_phase():
    a = rounds(4.0, fwd=1.0, bwd=3.0, opt=4.0)
    b = rounds(4.25, fwd=1.0, bwd=3.25, opt=4.0)  # one more tensor alive across the backward
    out = judge(a, b)
    assert out["memory_verdict"] == "more memory"
    assert out["memory_change_mib"] == pytest.approx(256.0)
    assert out["memory_change_pct"] == pytest.approx(6.25)
    assert out["memory_phase"] == "backward"
    assert out["peak_alloc_gib_a"] == 4.0 and out["peak_alloc_gib_b"] == 4.25
    assert out["peak_reserved_gib_b"] == 4.75 and out["memory_note"] == ""


def test_a_fall_is_less_memory():
    out = judge(rounds(2.0, fwd=2.0, bwd=1.0), rounds(1.5, fwd=1.5, bwd=1.0))
    assert out["memory_verdict"] == "less memory"
    assert out["memory_change_pct"] == pytest.approx(-25.0) and out["memory_phase"] == "forward"


def test_a_change_within_the_tolerance_is_same_memory():
    # 1% of 4 GiB is 40.96 MiB: 40 MiB more is within it, 42 MiB is not.
    assert judge(rounds(4.0), rounds(4.0 + 40 / 1024))["memory_verdict"] == "same memory"
    assert judge(rounds(4.0), rounds(4.0 + 42 / 1024))["memory_verdict"] == "more memory"
    # A small case: the 2 MiB floor, not 1% of 0.01 GiB, decides.
    small = judge(rounds(0.01), rounds(0.01 + 1.5 / 1024))
    assert small["memory_verdict"] == "same memory"
    assert judge(rounds(0.01), rounds(0.01 + 3 / 1024))["memory_verdict"] == "more memory"
    # A user's tolerance: 10% calls the 6.25% rise the same.
    assert judge(rounds(4.0), rounds(4.25), Tolerance(mib=0, pct=10))["memory_verdict"] == (
        "same memory"
    )
    assert judge(rounds(4.0), rounds(4.0))["memory_change_mib"] == 0


def test_rounds_of_one_side_that_differ_beyond_the_tolerance_are_not_repeatable():
    a = rounds(4.0)
    b = [{"peak_alloc_gib": v} for v in (4.0, 4.5, 4.0)]
    out = judge(a, b)
    assert out["memory_verdict"] == "memory not repeatable"
    assert out["memory_spread_mib_b"] == pytest.approx(512.0)
    assert out["memory_spread_mib_a"] == 0
    assert out["memory_note"] == "B's 3 rounds span 512 MiB (4 to 4.5 GiB)"
    # Within the tolerance, rounds that differ a little are one value: the median decides.
    near = [{"peak_alloc_gib": v} for v in (4.0, 4.0 + 1 / 1024, 4.0)]
    assert judge(a, near)["memory_verdict"] == "same memory"


def test_a_side_without_peaks_has_no_verdict_and_says_why():
    older = [{"status": "ok"}]  # a folder from before the memory columns
    cpu = [{"peak_alloc_gib": math.nan}, {"peak_alloc_gib": None}]
    out = judge(older, rounds(1.0))
    assert out["memory_verdict"] == "not measured"
    assert out["memory_note"] == "A's results predate peak memory columns"
    assert math.isnan(out["memory_change_mib"])
    out = judge(rounds(1.0), cpu)
    assert out["memory_note"].startswith("B did not measure peak memory")
    assert judge([], rounds(1.0))["memory_note"] == "A has no round of the case"


def test_retries_and_ooms_are_reported_not_judged():
    a = rounds(4.0, alloc_retries=0, ooms=0)
    b = rounds(4.0, alloc_retries=2, ooms=1)
    out = judge(a, b)
    assert out["memory_verdict"] == "same memory"
    assert (out["alloc_retries_a"], out["alloc_retries_b"], out["ooms_b"]) == (0, 6, 3)
    assert math.isnan(judge(rounds(4.0), rounds(4.0))["alloc_retries_a"])  # not recorded


@pytest.mark.parametrize(
    ("text", "mib", "pct"),
    [("1%", 0, 1), ("16MiB", 16, 0), ("16MiB,1%", 16, 1), ("0.5%, 4 mib", 4, 0.5)],
)
def test_a_tolerance_reads_percent_mib_or_both(text, mib, pct):
    assert Tolerance.parse(text) == Tolerance(mib=mib, pct=pct)
    assert Tolerance.parse(Tolerance(mib=mib, pct=pct).spec()) == Tolerance(mib=mib, pct=pct)


@pytest.mark.parametrize("bad", ["", "1", "5GB", "-1%", "1%%", "x"])
def test_a_bad_tolerance_names_its_value(bad):
    with pytest.raises(ValueError, match="memory tolerance") as err:
        Tolerance.parse(bad)
    assert repr(bad) in str(err.value)


def test_the_summary_counts_the_verdicts_with_the_range_of_the_change():
    made = [judge(rounds(4.0), rounds(4.0 * f)) for f in (1.11, 1.13, 1.12, 1.11)]
    made += [judge(rounds(4.0), rounds(4.0))] * 2 + [judge([{}], rounds(1.0))]
    assert memory.summary(made) == (
        "4 more memory (+11 to +13%), 2 same memory, 1 memory not measured"
    )
