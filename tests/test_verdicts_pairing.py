"""Pairing by seed in the training rule (`bench.verdicts.equivalence.paired_t`, a paired design's
levels `bench.verdicts.sequential.paired_levels`): its interval against scipy's, its false-
equivalence rate over looks by seeded simulation, a folder recorded before the test was part of
the design judged by Welch's t as before, and the words that say which test judged. Fixtures
built here."""

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from bench.ownloop import render as own_loop
from bench.quality.config import QualityConfig
from bench.quality.looks import design_of
from bench.store import results
from bench.verdicts import equivalence
from bench.verdicts import sequential as seq
from bench.verdicts import training as rules

X = [1.4702, 1.4751, 1.4683, 1.4720]
REF = [1.4690, 1.4712, 1.4660, 1.4711]


def test_the_paired_interval_is_scipys_paired_t():
    want = stats.ttest_rel(X, REF).confidence_interval(confidence_level=equivalence.CONFIDENCE)
    gap, low, high = equivalence.interval(np.array(X), np.array(REF), paired=True)
    assert (low, high) == pytest.approx((want.low, want.high), rel=1e-12)
    assert gap == pytest.approx(np.mean(X) - np.mean(REF))
    # Welch's on the same seeds is another, wider interval here: the sides move together.
    _, wl, wh = equivalence.interval(np.array(X), np.array(REF))
    assert wh - wl > high - low
    # The rule's own call pairs by seed, not by position: shuffled rows give the same interval.
    x = pd.Series(X, index=[0, 1, 2, 3])
    ref = pd.Series(REF, index=[0, 1, 2, 3]).iloc[[2, 0, 3, 1]]
    assert rules.interval(x, ref, paired=True) == pytest.approx((gap, low, high), rel=1e-12)


def test_paired_sides_that_do_not_pair_are_refused():
    with pytest.raises(ValueError, match="do not pair"):
        equivalence.interval(np.zeros(3), np.zeros(4), paired=True)


MARGIN, SD_REF, SD = 0.0146, 0.0019, 0.0063
"""A margin of 1% of a loss near 1.46 and two seed spreads, one 3× the other."""


def _within_over_looks(design: seq.Design, shift: float, rho: float, studies: int, seed: int):
    """The share of seeded studies of `design` whose mode, correlated `rho` with fp32 seed by
    seed and `shift` above it, is called within the margin at the first look that decides."""
    rng = np.random.default_rng(seed)
    z1, z2 = rng.standard_normal((2, studies, design.max_seeds))
    ref, x = SD_REF * z1, shift + SD * (rho * z1 + np.sqrt(1 - rho**2) * z2)
    looks = design.looks()
    word = np.zeros(studies, dtype=int)  # 0 not known, 1 within, 2 outside
    for n, level in zip(looks, design.levels(looks), strict=True):
        _, low, high = equivalence.interval(
            x[:, :n], ref[:, :n], level, paired=design.paired, conservative=True
        )
        w = np.where((low > -MARGIN) & (high < MARGIN), 1,
                     np.where((low > MARGIN) | (high < -MARGIN), 2, 0))  # fmt: skip
        word = np.where(word == 0, w, word)
    return float(np.mean(word == 1))


@pytest.mark.parametrize("shift", [MARGIN, -MARGIN])
def test_the_paired_rule_holds_false_equivalence_over_looks(shift):
    design, studies = seq.Design(first=3, max_seeds=8), 4000
    assert design.paired  # a new design pairs
    for k, rho in enumerate((0.0, 0.9)):
        # Seeds other than the levels' own draws (seed 0).
        rate = _within_over_looks(design, shift, rho, studies, seed=11 + 2 * k + (shift > 0))
        # Not above alpha beyond the simulation's own noise (a one-sided binomial test at 1%).
        p = stats.binomtest(round(rate * studies), studies, design.alpha, alternative="greater")
        assert p.pvalue > 0.01, (rho, rate)
    # Its levels are its own: after the first look, below the normal statistic's, which assume
    # a variance known at every look.
    own = design.levels(design.looks())
    normal = seq.Design(first=3, max_seeds=8, paired=False).levels(design.looks())
    assert own[0] == pytest.approx(normal[0])
    assert all(a < b for a, b in zip(own[1:], normal[1:], strict=True))


def frame(losses: dict[str, list[float]]) -> pd.DataFrame:
    rows = [{"mode": m, "seed": s, "initial_loss": 4.2, "best_loss": v, "status": "ok",
             "diverged_at_step": float("nan")}
            for m, values in losses.items() for s, v in enumerate(values)]  # fmt: skip
    return pd.DataFrame(rows)


# fp32's seeds spread wide against the margin; the mode follows each seed within 0.0005.
FP32 = [1.40, 1.46, 1.52, 1.43, 1.49, 1.46]
MODE = [v + d for v, d in zip(FP32, [0.0004, -0.0003, 0.0005, 0.0, -0.0004, 0.0002], strict=True)]
OLD_DESIGN = {"first": 3, "max_seeds": 6, "step": 1, "spending": "pocock", "alpha": 0.05}
"""A design as folders recorded it before the test was part of it."""


def test_a_design_recorded_without_the_field_is_judged_by_welch_as_before():
    df = frame({"fp32": FP32, "bf16-amp": MODE})
    looks, order = (3, 4, 5, 6), range(6)
    old = seq.Design.from_record(OLD_DESIGN)
    assert not old.paired
    assert old.levels(looks) == pytest.approx(seq.levels(tuple(n / 6 for n in looks)))
    welch = seq.judge(df, "bf16-amp", old, looks, order, synthetic=False)
    assert not welch.decided and "paired" not in welch.verdict.reason
    new = seq.Design.from_record(seq.Design(3, 6).record())
    assert new.paired
    paired = seq.judge(df, "bf16-amp", new, looks, order, synthetic=False)
    assert paired.look == 1 and paired.verdict.verdict == rules.LIKE
    assert "paired by seed" in paired.verdict.reason
    # A quality study resumed from such a folder keeps its recorded test; a new one pairs; one
    # look keeps Welch's t (its verdicts need no design).
    cfg = QualityConfig.build("cpu", {"max_seeds": 6})
    assert not design_of(cfg, OLD_DESIGN).paired and design_of(cfg).paired
    assert design_of(QualityConfig.build("cpu", {})) is None


def test_a_one_look_study_keeps_welch_and_pairs_only_seeds_both_finished():
    df = frame({"fp32": FP32[:4], "bf16-amp": MODE[:3]})
    df.loc[(df["mode"] == "fp32") & (df["seed"] == 2), "status"] = "error"
    welch = rules.trains_like_fp32(df, "bf16-amp", synthetic=False)
    assert "interval" in welch.reason and "paired" not in welch.reason
    # fp32's seed 2 failed: the mode's seeds 0-2 pair at 0 and 1 only, fewer than three.
    v = rules.trains_like_fp32(df, "bf16-amp", synthetic=False, paired=True)
    assert v.verdict == rules.NOT_KNOWN and "with fp32's at the same seed" in v.reason
    assert seq.undecided({"bf16-amp": seq.Judged(v, 3, 0.05, 1)}) == ["bf16-amp"]


def sweep_folder(path, design: dict) -> pd.DataFrame:
    """A sequential sweep's folder as the driver leaves it: env.json with its looks and design,
    each run's logged val_loss; its rows."""
    rows = []
    for mode, values in (("fp32", FP32), ("bf16-amp", MODE)):
        for seed, value in enumerate(values):
            run = f"runs/{mode}_seed{seed}"
            (path / run).mkdir(parents=True)
            lines = [{"step": 0, "name": "val_loss", "value": 4.2},
                     {"step": 10, "name": "val_loss", "value": value}]  # fmt: skip
            (path / run / "metrics.jsonl").write_text("\n".join(map(json.dumps, lines)) + "\n")
            rows.append({"case_id": f"{mode}_{seed}", "mode": mode, "seed": seed,
                         "status": "ok", "run": run})  # fmt: skip
    env = {"looks": [3, 4, 5, 6], "design": design, "seed_order": list(range(6)),
           "looks_ended": "the cap"}  # fmt: skip
    (path / results.ENV).write_text(json.dumps(env))
    return pd.DataFrame(rows)


@pytest.mark.parametrize(
    ("design", "paired"), [(OLD_DESIGN, False), (seq.Design(3, 6).record(), True)]
)
def test_a_sweeps_table_says_which_test_judged(tmp_path, design, paired):
    rows = sweep_folder(tmp_path, design)
    verdicts, *_ = own_loop.judge_training(tmp_path, rows, None)
    said = verdicts["bf16-amp"]
    assert (said.verdict == rules.LIKE) is paired
    assert ("paired by seed" in said.reason) is paired
    notes = own_loop.looks_notes(results.read_env(tmp_path), verdicts)
    assert f"the test: {rules.TEST_NAMES[paired]}" in notes[0]
    assert own_loop.test_of({}) == "Welch's t"  # a sweep of one look
