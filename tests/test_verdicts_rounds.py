"""The rounds judge (`bench.verdicts.rounds`): the t-test by hand and against scipy, the
moderation prior, Holm's and Benjamini-Hochberg's corrections, and the looks' split of alpha."""

import math

import numpy as np
import pytest
from scipy import stats

from bench.verdicts.rounds import (
    MIN_ROUNDS,
    Prior,
    benjamini_hochberg,
    decided,
    family_verdicts,
    fit_prior,
    holm,
    judge_family,
    paired_ratio,
    rounds_verdict,
)


def test_without_a_prior_the_verdict_is_students_t_on_log_rounds():
    a = [10.0, 10.1, 9.9, 10.05, 9.95]
    b = [10.6, 10.4, 10.5, 10.55, 10.45]
    out = rounds_verdict(a, b)
    ref = stats.ttest_ind(np.log(b), np.log(a))
    assert out["p_value"] == pytest.approx(ref.pvalue)
    assert out["df"] == 8 and out["verdict"] == "slower"
    assert out["ratio"] == pytest.approx(math.exp(np.log(b).mean() - np.log(a).mean()))
    # The interval is the t interval of the difference of mean logs, at 95%.
    se = np.log(out["ratio"]) / ref.statistic
    half = stats.t.ppf(0.975, 8) * se
    assert out["ratio_lo"] == pytest.approx(out["ratio"] * math.exp(-half))
    assert out["ratio_hi"] == pytest.approx(out["ratio"] * math.exp(half))


def test_fewer_rounds_than_the_minimum_are_too_few():
    few = [1.0 + 0.01 * i for i in range(MIN_ROUNDS - 1)]
    out = rounds_verdict(few, [2.0 * v for v in few])
    assert out["too_few"] and out["verdict"] == "unclear" and math.isnan(out["p_value"])
    enough = [1.0 + 0.01 * i for i in range(MIN_ROUNDS)]
    assert not rounds_verdict(enough, [2.0 * v for v in enough])["too_few"]
    with pytest.raises(ValueError, match="a round on each side"):
        rounds_verdict([], [1.0])
    with pytest.raises(ValueError, match="looks"):
        rounds_verdict(enough, enough, looks=0)


def test_a_prior_lends_its_degrees_of_freedom_but_never_lowers_a_cases_own_spread():
    a, b = [1.0, 1.002, 0.998, 1.001, 0.999], [1.01, 1.012, 1.008, 1.011, 1.009]
    alone = rounds_verdict(a, b)
    wide = rounds_verdict(a, b, prior=Prior(s2=1e-4, df=20))
    narrow = rounds_verdict(a, b, prior=Prior(s2=1e-12, df=20))
    assert wide["df"] == narrow["df"] == alone["df"] + 20
    assert wide["p_value"] > alone["p_value"]  # a wider prior spread weighs in
    assert narrow["noise"] == pytest.approx(alone["noise"])  # the own spread is the floor
    assert narrow["p_value"] < alone["p_value"]  # same spread, more degrees of freedom


def test_the_prior_fits_what_the_variances_say():
    rng = np.random.default_rng(1)
    # One true variance: the scatter of the estimates is chance alone, so the prior pools.
    same = 1e-4 * rng.chisquare(8, 400) / 8
    pooled = fit_prior(same, [8] * 400)
    assert pooled.df >= 50 and pooled.s2 == pytest.approx(1e-4, rel=0.1)
    # Variances spread over two orders of magnitude: little to lend.
    apart = 10 ** rng.uniform(-6, -2, 400) * rng.chisquare(8, 400) / 8
    assert fit_prior(apart, [8] * 400).df < 3
    assert fit_prior([1e-4, 2e-4], [8, 8]) == Prior()  # too few cases to fit
    # No scatter at all: the variances are one, worth no more than all of them pooled (40 df),
    # not an infinite df (normal critical values where t applies).
    assert fit_prior([1e-4] * 5, [8] * 5) == Prior(s2=pytest.approx(1e-4), df=40)
    assert fit_prior(same, [8] * 400).df <= 8 * 400


def test_holm_by_hand():
    # Sorted: 0.005, 0.01, 0.03, 0.04 face 4×, 3×, 2× and 1×: 0.02, 0.03, 0.06, 0.04; each
    # adjusted p is at least the one before it (the steps stop at the first that fails), so
    # 0.04 becomes 0.06. At 5%: the two smallest are called, 0.03 and 0.04 no longer.
    assert holm([0.01, 0.04, 0.03, 0.005]).tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.6]).tolist() == [1.0, 1.0]  # 2 × 0.5, clipped at 1
    assert holm([0.01]).tolist() == [0.01]  # one test: nothing to correct
    # A test not made (NaN) stays NaN and does not count: m = 2.
    out = holm([0.02, math.nan, 0.01])
    assert out[0] == pytest.approx(0.02) and math.isnan(out[1]) and out[2] == pytest.approx(0.02)
    assert holm([]).tolist() == []


@pytest.mark.parametrize("bad", [[1.5], [-0.1], [[0.1, 0.2]]])
def test_holm_refuses_what_is_not_a_list_of_p_values(bad):
    with pytest.raises(ValueError, match="p-values"):
        holm(bad)


def test_benjamini_hochberg_by_hand():
    # Sorted 0.005, 0.01, 0.03, 0.04 (m = 4): × 4/1, 4/2, 4/3, 4/4 = 0.02, 0.02, 0.04, 0.04,
    # each the smallest of itself and those above it.
    out = benjamini_hochberg([0.01, 0.04, 0.03, 0.005, math.nan])
    assert out[:4].tolist() == pytest.approx([0.02, 0.04, 0.04, 0.02]) and math.isnan(out[4])


def test_a_family_keeps_only_the_calls_that_survive_holm():
    for n, expected in ((6, "slower"), (10, "unclear")):
        p = 0.0079  # over 6 cases 6 × p = 0.047 <= 5%: all stay slower; over 10, 0.079: none
        out = family_verdicts([{"case": i, "p_value": p, "verdict": "slower"} for i in range(n)])
        assert {c["verdict"] for c in out} == {expected}
        assert out[0]["p_holm"] == pytest.approx(n * p)
        assert list(out[0]) == ["case", "p_value", "p_holm", "verdict"]
    cases = [
        {"p_value": 0.001, "verdict": "faster"},  # 4 × 0.001: called
        {"p_value": 0.02, "verdict": "slower"},  # 3 × 0.02 = 0.06: not
        {"p_value": 0.5, "verdict": "same"},  # stands
        {"p_value": math.nan, "verdict": "unclear"},  # too few rounds: not in the family
        {"p_value": 0.9, "verdict": "unclear"},
        {"verdict": "missing"},
    ]
    out = family_verdicts(cases)
    assert [c["verdict"] for c in out] == [
        "faster",
        "unclear",
        "same",
        "unclear",
        "unclear",
        "missing",
    ]
    assert [c.get("p_holm") for c in out][:3] == pytest.approx([0.004, 0.06, 1.0])
    assert "p_holm" not in out[-1] and cases[1]["verdict"] == "slower"  # inputs untouched
    # At 99% the faster call (p_holm 0.004) survives too; at 99.9% it does not.
    assert family_verdicts(cases, confidence=0.99)[0]["verdict"] == "faster"
    assert family_verdicts(cases, confidence=0.999)[0]["verdict"] == "unclear"
    # Five looks: each at 1%, so the call of p_holm 0.004 stands, one of 0.02 would not.
    assert family_verdicts(cases, looks=5)[0]["verdict"] == "faster"
    assert family_verdicts(cases[:2], looks=5)[1]["verdict"] == "unclear"


def test_the_family_judge_moderates_within_a_mode_and_decides():
    rng = np.random.default_rng(3)
    rounds = []
    for i in range(12):
        a = 10.0 * np.exp(rng.normal(0, 0.002, 5))
        b = 10.0 * np.exp(rng.normal(0.05 if i < 6 else 0.0, 0.002, 5))
        rounds.append(("fp32" if i % 2 else "bf16-amp", a, b))
    out = judge_family(rounds)
    words = [v["verdict"] for v in out]
    assert words[:6] == ["slower"] * 6 and words[6:] == ["same"] * 6
    assert all(v["df"] > 8 for v in out)  # each lent degrees of freedom by its mode
    assert decided(words) and not decided([*words, "unclear"])


def test_paired_rounds_cancel_the_drift_they_share():
    drift = np.array([8.7, 9.4, 10.5, 11.2, 12.4, 9.8])
    b = drift * 1.02 * np.array([1.001, 0.999, 1.0, 1.001, 0.999, 1.0])
    paired = paired_ratio(drift, b)
    assert paired["ratio"] == pytest.approx(1.02, rel=1e-3)
    assert 1.015 < paired["ratio_lo"] < 1.02 < paired["ratio_hi"] < 1.025
    # Taken as independent rounds, the shared drift swamps the 2%.
    assert rounds_verdict(list(drift), list(b))["verdict"] == "unclear"
    with pytest.raises(ValueError, match="paired rounds: 3 and 2"):
        paired_ratio([1.0, 1.0, 1.0], [1.0, 1.0])


# `compare`'s and `ab`'s judge at their own spreads (1-3% between rounds), simulated with fixed
# RNG seeds. A rate's bound is the stated 5% plus three of its simulation's standard errors, so
# the simulation's own luck cannot fail it; scripts/speed_rule_sim.py measures the rates closer.
def _a_a(rng, n: int, cases: int, sd: float, looks: int = 1) -> bool:
    a = np.exp(rng.normal(0, sd, (cases, n)))
    b = np.exp(rng.normal(0, sd, (cases, n)))
    verdicts = judge_family([("m", a[c], b[c]) for c in range(cases)], looks=looks)
    return any(v["verdict"] in ("faster", "slower") for v in verdicts)


def _bound(runs: int) -> float:
    return 0.05 + 3 * math.sqrt(0.05 * 0.95 / runs)


@pytest.mark.parametrize("sd", [0.01, 0.02, 0.03])
def test_compare_holds_its_error_over_the_cases_from_two_rounds_a_side(sd):
    # 2 rounds a side: each case on its own spread; 5: moderated across the 8 cases.
    rng = np.random.default_rng(int(sd * 1000))
    for n, cases in ((MIN_ROUNDS, 4), (5, 8)):
        rate = np.mean([_a_a(rng, n, cases, sd) for _ in range(400)])
        assert rate <= _bound(400), (n, rate)


def test_abs_looks_hold_the_error_over_the_cases_and_the_looks():
    # ab's defaults: looks at 5, 6 and 7 rounds a side, each at alpha / 3; 4 cases, at 3%.
    rng = np.random.default_rng(21)
    false = 0
    for _ in range(400):
        a = np.exp(rng.normal(0, 0.03, (4, 7)))
        b = np.exp(rng.normal(0, 0.03, (4, 7)))
        for n in (5, 6, 7):
            words = [v["verdict"] for v in judge_family(
                [("m", a[c, :n], b[c, :n]) for c in range(4)], looks=3)]  # fmt: skip
            if decided(words) or n == 7:
                false += any(w in ("faster", "slower") for w in words)
                break
    assert false / 400 <= 0.05


def test_compare_finds_a_change_as_large_against_its_spread_as_1_2x_is_at_9_percent():
    # log(1.2) / 0.09 = 2.03 SDs of a round: at 3% a 6.3% change, one case of 8, 10 rounds.
    rng = np.random.default_rng(22)
    shift = math.log(1.2) / 0.09 * 0.03
    called = 0
    for _ in range(150):
        a = np.exp(rng.normal(0, 0.03, (8, 10)))
        b = np.exp(rng.normal(0, 0.03, (8, 10)))
        b[0] *= math.exp(-shift)
        called += judge_family([("m", a[c], b[c]) for c in range(8)])[0]["verdict"] == "faster"
    assert called / 150 >= 0.8


def test_compare_decides_a_1_7x_change_at_3_percent_with_2_rounds_a_side():
    rng = np.random.default_rng(23)
    called = 0
    for _ in range(200):
        a = np.exp(rng.normal(0, 0.03, (4, 2)))
        b = np.exp(rng.normal(0, 0.03, (4, 2)))
        b[0] /= 1.7
        called += judge_family([("m", a[c], b[c]) for c in range(4)])[0]["verdict"] == "faster"
    assert called / 200 >= 0.9
