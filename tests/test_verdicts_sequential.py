"""The group-sequential equivalence rule (`bench.verdicts.sequential`): its boundaries against
published ones, its error rate and power over looks by seeded simulation, and its verdicts on
fixtures this file builds."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from bench.verdicts import equivalence
from bench.verdicts import sequential as seq
from bench.verdicts import training as rules

MARGIN = 0.0146
"""1% of the H200 nanoGPT study's fp32 mean best held-out loss."""
SPREAD = {"fp32": 0.0019, "bf16-amp": 0.0063, "fp8-tensorwise": 0.0076}
"""Seed SDs of best held-out loss in that study: modes scatter 3–4× as much as fp32."""


def _classify(low: np.ndarray, high: np.ndarray, m: float) -> np.ndarray:
    """`rules.classify` over arrays."""
    inside = (low > -m) & (high < m)
    within = np.where(low > 0, rules.WITHIN_WORSE,
                      np.where(high < 0, rules.WITHIN_BETTER, rules.LIKE))  # fmt: skip
    return np.select(
        [low > m, high < -m, inside], [rules.WORSE, rules.BETTER, within],
        rules.NOT_KNOWN,
    )  # fmt: skip


def simulate(
    design: seq.Design,
    sd: float,
    m: float,
    *,
    shift: float = 0.0,
    sd_ref: float | None = None,
    studies: int = equivalence.SIMULATED,
    seed: int = 0,
    sequential: bool = True,
) -> dict[str, float]:
    """Seeded studies of the design, the mode's seeds normal with SD `sd` and its mean
    `shift` above fp32's (whose SD is `sd_ref`, `sd` where None): the share ending in each
    verdict, `within` (any of the three inside the margin), and `mean_seeds` (seeds a side at
    the look that stopped). `sequential=False` judges every look at the fixed level: the
    optional stopping the rule replaces."""
    rng = np.random.default_rng(seed)
    top = design.max_seeds
    ref = rng.normal(0.0, sd if sd_ref is None else sd_ref, (studies, top))
    x = rng.normal(shift, sd, (studies, top))
    looks = design.looks()
    lv = design.levels(looks) if sequential else (design.alpha,) * len(looks)
    word = np.full(studies, rules.NOT_KNOWN, dtype=object)
    stop = np.full(studies, looks[-1])
    open_ = np.ones(studies, dtype=bool)
    for n, level in zip(looks, lv, strict=True):
        _, low, high = equivalence.welch(x[:, :n], ref[:, :n], level, conservative=True)
        w = _classify(low, high, m)
        now = open_ & (w != rules.NOT_KNOWN)
        word[now], stop[now] = w[now], n
        open_ &= ~now
    out = {v: float(np.mean(word == v)) for v in
           (rules.LIKE, rules.WITHIN_WORSE, rules.WITHIN_BETTER, rules.WORSE,
            rules.BETTER, rules.NOT_KNOWN)}  # fmt: skip
    out["within"] = float(np.isin(word, list(rules.WITHIN)).mean())
    out["mean_seeds"] = float(stop.mean())
    return out


@pytest.mark.parametrize(
    ("spending", "bounds"),
    [
        # gsDesign's sfLDPocock and sfLDOF, 5 equal looks, one-sided alpha 0.025.
        ("pocock", [2.4380, 2.4268, 2.4101, 2.3966, 2.3859]),
        ("obrien-fleming", [4.8769, 3.3569, 2.6803, 2.2898, 2.0310]),
    ],
)
def test_the_boundaries_are_lan_demets(spending, bounds):
    lv = seq.levels((0.2, 0.4, 0.6, 0.8, 1.0), 0.025, spending)
    assert [stats.norm.isf(p) for p in lv] == pytest.approx(bounds, abs=2e-4)


@pytest.mark.parametrize("spending", list(seq.SPENDING))
@pytest.mark.parametrize("shift", [MARGIN, -MARGIN])
def test_a_gap_at_the_margin_is_called_within_at_most_at_the_stated_rate(spending, shift):
    design = seq.Design(first=3, max_seeds=8, spending=spending)
    for mode in ("bf16-amp", "fp32"):  # a mode that scatters 3× as much as fp32, and one alike
        rates = simulate(design, SPREAD[mode], MARGIN, shift=shift, sd_ref=SPREAD["fp32"])
        # Not above alpha beyond the simulation's own noise (a one-sided binomial test at 1%).
        called = round(rates["within"] * equivalence.SIMULATED)
        p = stats.binomtest(
            called, equivalence.SIMULATED, design.alpha, alternative="greater"
        ).pvalue
        assert p > 0.01, (mode, rates)
    # The optional stopping the rule replaces: the fixed 90% interval at every look.
    naive = simulate(design, SPREAD["bf16-amp"], MARGIN, shift=shift, sd_ref=SPREAD["fp32"],
                         sequential=False)  # fmt: skip
    assert naive["within"] > 2 * design.alpha


def test_a_mode_like_fp32_at_a_realistic_spread_is_called_within_with_power():
    design = seq.Design(first=3, max_seeds=seq.DEFAULT_MAX_SEEDS)
    for mode in ("bf16-amp", "fp8-tensorwise"):
        rates = simulate(design, SPREAD[mode], MARGIN, sd_ref=SPREAD["fp32"])
        assert rates["within"] >= rules.POWER, (mode, rates)
        assert rates["worse"] == rates["better"] == 0
        assert rates["mean_seeds"] < design.max_seeds - 2  # most stop well before the cap
    # Three seeds and no more looks have far less power at that spread.
    fixed = simulate(seq.Design(3, 3), SPREAD["fp8-tensorwise"], MARGIN, sd_ref=SPREAD["fp32"])
    assert fixed["within"] < rules.POWER


def test_pocock_stops_sooner_than_obrien_fleming_at_the_first_looks():
    kw = {"sd": SPREAD["bf16-amp"], "m": MARGIN, "sd_ref": SPREAD["fp32"]}
    pocock = simulate(seq.Design(3, 8, spending="pocock"), **kw)
    obf = simulate(seq.Design(3, 8, spending="obrien-fleming"), **kw)
    assert pocock["mean_seeds"] < obf["mean_seeds"]


def frame(losses: dict[str, list[float]]) -> pd.DataFrame:
    rows = [{"mode": m, "seed": s, "initial_loss": 4.2, "best_loss": v, "status": "ok",
             "diverged_at_step": float("nan")}
            for m, values in losses.items() for s, v in enumerate(values)]  # fmt: skip
    return pd.DataFrame(rows)


FP32 = [1.470, 1.471, 1.469, 1.4705, 1.4695, 1.470]


def test_a_mode_is_judged_at_the_look_that_decided_it_and_later_looks_are_not_its():
    df = frame({"fp32": FP32, "tf32": [1.470, 1.4702, 1.4698], "bf16-amp":
                [1.462, 1.480, 1.471, 1.470, 1.471, 1.469]})  # fmt: skip
    design = seq.Design(first=3, max_seeds=6)
    looks, order = (3, 4, 5, 6), range(6)
    tf32 = seq.judge(df, "tf32", design, looks, order, synthetic=False)
    assert tf32.look == 1 and tf32.verdict.verdict == rules.LIKE and tf32.seeds == 3
    assert tf32.level == design.levels(looks)[0] < rules.ALPHA
    amp = seq.judge(df, "bf16-amp", design, looks, order, synthetic=False)
    assert amp.look > 1 and amp.decided and amp.verdict.within
    # At the first look alone the scattered mode was not known, and names the seeds it needs.
    first = seq.judge(df, "bf16-amp", design, (3,), order, synthetic=False)
    assert not first.decided and first.verdict.needed > 3
    assert seq.undecided({"tf32": tf32, "bf16-amp": first}) == ["bf16-amp"]


def test_a_study_where_fp32_learned_nothing_adds_no_seeds():
    df = frame({"fp32": [4.19, 4.2, 4.18], "bf16-amp": [4.2, 4.19, 4.2]})
    j = seq.judge(df, "bf16-amp", seq.Design(3, 8), (3,), range(3), synthetic=False)
    assert not j.decided and seq.undecided({"bf16-amp": j}) == []


@pytest.mark.parametrize(
    ("kw", "needle"),
    [({"first": 2, "max_seeds": 8}, "fewer than 3"), ({"first": 3, "max_seeds": 2}, "below"),
     ({"first": 3, "max_seeds": 8, "spending": "haybittle"}, "haybittle")],
)  # fmt: skip
def test_a_bad_design_names_the_value(kw, needle):
    with pytest.raises(ValueError, match=needle):
        seq.Design(**kw)


@pytest.mark.parametrize(
    ("looks", "expected"),
    # Design(3, 8): information 3/8 and 4/8 of the planned cap; over the latest look taken
    # (3/3, or 3/4 and 4/4) the same looks would be judged at 0.050, and 0.041 and 0.026.
    [((3,), (0.0249,)), ((3, 4), (0.0249, 0.0164))],
)
def test_a_look_in_progress_has_its_share_of_the_planned_cap_not_of_the_looks_taken(
    looks, expected
):
    design = seq.Design(first=3, max_seeds=8, paired=False)  # the normal levels' figures
    assert design.levels(looks) == pytest.approx(expected, abs=5e-4)
    df = frame({"fp32": FP32[:4], "bf16-amp": [1.462, 1.480, 1.471, 1.470]})
    j = seq.judge(df, "bf16-amp", design, looks, range(4), synthetic=False)
    assert j.level == pytest.approx(expected[j.look - 1], abs=5e-4)
