"""The rules that judge how a mode trains: the margin, the quality target, "trains like fp32",
GradScaler "needed", and the fastest mode to the target (docs/quality.md states each and why).
Pandas and scipy: a finished study's tables in, a `Verdict` out; every page reads these rules."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from bench.verdicts import equivalence, timing
from bench.verdicts.equivalence import (
    ALPHA,
    MAX_SEEDS,
    MIN_SEEDS,
    POWER,
    mode_seeds_needed,
    sd_upper,
    seeds_needed,
)

REFERENCE = "fp32"
LEARNED_DROP = 0.25
"""fp32 learned when its best held-out loss is at least this share below its value before
training; a run that starts from trained weights declares the drop it expects instead (`sweep
--expected-drop`)."""
MARGIN_SHARE = 0.01
"""The equivalence margin: this share of fp32's mean best held-out loss."""
MIN_ELEMENTS = 1024
"""Tensors smaller than this cannot decide the GradScaler verdict."""
UNSTABLE_RISE = 0.10
UNSTABLE_AGAINST = 2.0
"""A run is unstable where its final held-out loss ends `UNSTABLE_RISE` above its best and its
rise is `UNSTABLE_AGAINST` × the largest of the mode it is set against (overfitting raises
both; instability only one)."""
NOISY_IQR_OVER_MEDIAN = 0.05
"""`bench.measure.stats`'s noise bar (verdicts import no measuring code): the same rule."""

LIKE, WORSE, BETTER, NOT_KNOWN = "trains like fp32", "worse", "better", "not known"
WITHIN_WORSE = "within the margin, measurably worse"
WITHIN_BETTER = "within the margin, measurably better"
WITHIN = frozenset({LIKE, WITHIN_WORSE, WITHIN_BETTER})
"""The verdicts that place a mode inside the margin: it trains like fp32 at this margin."""
NEEDED, NOT_NEEDED, NO_FIX = "needed", "not needed", "does not fix it"


@dataclass(frozen=True)
class Verdict:
    verdict: str
    reason: str
    gap: float = math.nan
    """Mode minus fp32, mean best held-out loss."""
    low: float = math.nan
    high: float = math.nan
    margin: float = math.nan
    needed: int = 0
    """Where not known: the seeds per side the rule needs for this mode (its own spread and
    fp32's, `mode_seeds_needed`); 0 elsewhere."""

    @property
    def within(self) -> bool:
        """Inside the margin: trains like fp32, measurably different or not."""
        return self.verdict in WITHIN


@dataclass(frozen=True)
class Margin:
    """A study's one margin, with why it is what it is; the test and the target both use it."""

    value: float
    """In held-out loss; NaN where fp32 gives none."""
    reference_mean: float
    reference_sd: float
    seeds: int
    """fp32's finished seeds."""
    seeds_needed: int
    """Per mode, for `POWER` at fp32's seed SD's 90% upper bound (`seeds_needed`)."""

    @property
    def enough(self) -> bool:
        """The rule's first branch: the study has the seeds the rule needs."""
        return self.seeds >= self.seeds_needed

    @property
    def reason(self) -> str:
        if math.isnan(self.value):
            return "no margin: fp32 has no finished seeds"
        head = (
            f"±{self.value:.3g}, {MARGIN_SHARE:.0%} of fp32's mean best held-out loss "
            f"{self.reference_mean:.4g}, declared"
        )
        count = (
            f"more than {MAX_SEEDS}" if self.seeds_needed > MAX_SEEDS else str(self.seeds_needed)
        )
        need = (
            f"The rule needs {count} seeds per mode (power {POWER:.0%} at the 90% upper bound "
            f"of fp32's seed SD {self.reference_sd:.2g})"
        )
        if self.enough:
            return f"{head}. {need}; this study has {self.seeds}"
        return f"{head}. {need}; this study has only {self.seeds}"


def margin_of(summary: pd.DataFrame) -> Margin:
    """The study's margin from fp32's finished seeds (docs/quality.md states the rule)."""
    ref = _reference(summary)["best_loss"].dropna()
    if ref.empty:
        return Margin(math.nan, math.nan, math.nan, 0, MIN_SEEDS)
    mean = float(ref.mean())
    sd = float(ref.std(ddof=1)) if len(ref) > 1 else math.nan
    m = MARGIN_SHARE * abs(mean)
    needed = seeds_needed(sd_upper(ref), m) if len(ref) > 1 else MIN_SEEDS
    return Margin(m, mean, sd, len(ref), needed)


def _reference(summary: pd.DataFrame) -> pd.DataFrame:
    if summary.empty or "mode" not in summary:
        return summary
    return summary[(summary["mode"] == REFERENCE) & (summary["status"] == "ok")]


def per_run(curves: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (mode, seed): held-out loss at step 0, best (and its step), final; best and
    final accuracy; the last evaluated step; the run's status and steps."""
    rows = []
    for (mode, seed), g in curves.groupby(["mode", "seed"], sort=False):
        g = g.sort_values("step")
        finite = g[np.isfinite(g["heldout_loss"])]
        best = finite.loc[finite["heldout_loss"].idxmin()] if len(finite) else None
        rows.append(
            {
                "mode": mode,
                "seed": int(seed),
                "initial_loss": float(g["heldout_loss"].iloc[0]),
                "initial_step": int(g["step"].iloc[0]),
                "best_loss": float(best["heldout_loss"]) if best is not None else math.nan,
                "best_step": int(best["step"]) if best is not None else -1,
                "last_step": int(g["step"].iloc[-1]),
                "final_loss": float(g["heldout_loss"].iloc[-1]),
                "best_accuracy": float(finite["heldout_accuracy"].max()) if len(finite) else 0.0,
                "final_accuracy": float(g["heldout_accuracy"].iloc[-1]),
            }
        )
    out = pd.DataFrame(rows, columns=["mode", "seed", "initial_loss", "initial_step", "best_loss",
                                      "best_step", "last_step", "final_loss", "best_accuracy",
                                      "final_accuracy"])  # fmt: skip
    keep = ["mode", "seed", "status", "steps", "diverged_at_step", "skipped_steps", "start_step"]
    return out.merge(runs[[c for c in keep if c in runs]], on=["mode", "seed"], how="left")


def target(summary: pd.DataFrame, drop: float = LEARNED_DROP) -> tuple[float | None, str]:
    """(the held-out loss target, what it is) or (None, why there is none). `drop`: the share
    below its value before training that fp32's best must reach for the rule to say it learned
    (`LEARNED_DROP`, or what a fine-tuning run declared)."""
    ref = _reference(summary)
    if len(ref) < MIN_SEEDS:
        return None, f"{REFERENCE} finished {len(ref)} seeds, fewer than {MIN_SEEDS}"
    # A run resumed from a checkpoint (the framework's global step above 0 when it began)
    # started trained: its first value is no value before training, and the rule judges it not.
    fresh = ref[_start_steps(ref) == 0]
    rule = f"{REFERENCE}'s best is not {drop:.0%} below its value before training"
    unlearned = fresh[fresh["best_loss"] > (1 - drop) * fresh["initial_loss"]]
    if len(unlearned):
        # Only a value logged before any update shows where the loss started: a first value
        # logged after training began may already hold most of the fall, so a small drop from
        # it says nothing about whether fp32 learned.
        late = unlearned[unlearned.apply(_first_step, axis=1) > 0]
        if len(late) < len(unlearned):
            r = unlearned[unlearned.apply(_first_step, axis=1) == 0].iloc[0]
            return None, (
                f"{rule}: seed {r['seed']}'s best held-out loss {r['best_loss']:.4g} against "
                f"{r['initial_loss']:.4g} at step 0 (a run that starts from trained weights "
                "declares the drop it expects: sweep --expected-drop)"
            )
        r = late.iloc[0]
        return None, (
            f"cannot tell whether {rule.replace('is not', 'is')}: seed {r['seed']}'s first "
            f"held-out loss was logged at step {_first_step(r)}, after training began, and its "
            f"best {r['best_loss']:.4g} is not {drop:.0%} below that {r['initial_loss']:.4g}; "
            "log one before the first step (transformers: eval_on_start=True in "
            "TrainingArguments; Lightning: num_sanity_val_steps=-1 in the Trainer, which "
            "ProbeCallback sets; your own loop: evaluate and log before it)"
        )
    m = margin_of(summary)
    return m.reference_mean + m.value, f"{REFERENCE}'s mean best held-out loss plus the margin"


def resumed(summary: pd.DataFrame) -> list[int]:
    """fp32's finished seeds that resumed from a checkpoint: `target` judges them not on
    whether fp32 learned."""
    ref = _reference(summary)
    return sorted(int(s) for s in ref[_start_steps(ref) > 0]["seed"])


def _start_steps(runs: pd.DataFrame) -> pd.Series:
    """Each run's framework global step when it began (0: from scratch; a study's runs, and a
    user's loop that does not say, count as 0)."""
    if "start_step" not in runs:
        return pd.Series(0, index=runs.index)
    return pd.to_numeric(runs["start_step"], errors="coerce").fillna(0)


def _first_step(run: pd.Series) -> int:
    """The step of a run's first held-out loss: 0 in a study; a user's own loop may log its
    first later (summaries made before the step was kept say step 0)."""
    step = run.get("initial_step", 0)
    return 0 if pd.isna(step) else int(step)


def still_improving(summary: pd.DataFrame, mode: str = REFERENCE) -> list[int]:
    """The finished seeds of `mode` whose best held-out loss is at their last evaluation: the
    budget ended while they were still improving, and a verdict holds for that budget only."""
    mine = summary[(summary["mode"] == mode) & (summary["status"] == "ok")]
    if mine.empty or "last_step" not in mine:
        return []
    return [int(x) for x in mine[mine["best_step"] >= mine["last_step"]]["seed"]]


def steps_to(curves: pd.DataFrame, goal: float) -> pd.DataFrame:
    """(mode, seed, steps): the first evaluated step whose held-out loss is at or below `goal`
    (NaN where none was)."""
    rows = []
    for (mode, seed), g in curves.groupby(["mode", "seed"], sort=False):
        hit = g[g["heldout_loss"] <= goal]["step"]
        rows.append({"mode": mode, "seed": int(seed), "steps": hit.min() if len(hit) else math.nan})
    return pd.DataFrame(rows, columns=["mode", "seed", "steps"])


def interval(
    x: pd.Series,
    ref: pd.Series,
    level: float = ALPHA,
    *,
    conservative: bool = False,
    paired: bool = False,
) -> tuple[float, float, float]:
    """(mean(x) − mean(ref), and its interval at one-sided `level` a side) by the study's test
    (`bench.verdicts.equivalence.interval`); `paired`: x and ref indexed by seed, and only the
    seeds both have are judged."""
    if paired:
        x, ref = pair(x, ref)
    gap, low, high = equivalence.interval(
        x.to_numpy(), ref.to_numpy(), level, paired=paired, conservative=conservative
    )
    return float(gap), float(low), float(high)


def pair(x: pd.Series, ref: pd.Series) -> tuple[pd.Series, pd.Series]:
    """x and ref (indexed by seed) at the seeds both finished, in one order: a seed's mode run
    and its fp32 run started from the same weights and batches."""
    seeds = x.index.intersection(ref.index).sort_values()
    return x.loc[seeds], ref.loc[seeds]


TEST_NAMES = {False: "Welch's t", True: "paired t on the per-seed differences"}
"""How a report names each test of the training rule (`paired` or not)."""


def classify(low: float, high: float, m: float) -> str:
    """The verdict word of a 90% interval [low, high] of the gap against the margin ±m."""
    if low > m:
        return WORSE
    if high < -m:
        return BETTER
    if -m < low and high < m:
        return WITHIN_WORSE if low > 0 else WITHIN_BETTER if high < 0 else LIKE
    return NOT_KNOWN


def size(gap: float, reference_mean: float) -> str:
    """A gap with its share of fp32's mean: `+0.0086 (+0.59%)`."""
    pct = 100 * gap / reference_mean
    return f"{gap:+.2g} ({pct:+.0f}%)" if abs(pct) >= 10 else f"{gap:+.2g} ({pct:+.2g}%)"


def trains_like_fp32(
    summary: pd.DataFrame,
    mode: str,
    *,
    synthetic: bool,
    level: float = ALPHA,
    conservative: bool = False,
    paired: bool = False,
    drop: float = LEARNED_DROP,
) -> Verdict:
    """Whether `mode` trains like fp32 on this study's data (docs/quality.md states the rule), each
    one-sided test at `level`; a sequential study's look passes its own level and
    `conservative` degrees of freedom (`bench.verdicts.equivalence.welch`,
    `bench.verdicts.sequential`). `paired`, the study's declared test: a paired t on each
    seed's mode − fp32, over the seeds both finished; `drop`: what `target` asks of fp32."""
    if mode == REFERENCE:
        return Verdict(LIKE, "it is the reference")
    if synthetic:
        return Verdict(NOT_KNOWN, "synthetic data: nothing real to learn")
    mine = summary[summary["mode"] == mode]
    ref = _reference(summary)
    goal, why = target(summary, drop)
    if goal is None:
        return Verdict(NOT_KNOWN, why)
    diverged = mine[mine["status"] == "diverged"]
    if len(diverged):
        steps = ", ".join(str(int(s)) for s in diverged["diverged_at_step"])
        return Verdict(WORSE, f"diverged in {len(diverged)} of {len(mine)} seeds (step {steps})")
    done = mine[mine["status"] == "ok"]
    x, r = done.set_index("seed")["best_loss"], ref.set_index("seed")["best_loss"]
    if paired:
        x, r = pair(x, r)
    if len(x) < MIN_SEEDS:
        seeds = "1 seed" if len(x) == 1 else f"{len(x)} seeds"
        with_ref = f" with {REFERENCE}'s at the same seed" if paired else ""
        return Verdict(NOT_KNOWN, f"{seeds} finished, fewer than {MIN_SEEDS}{with_ref}")
    gap, low, high = interval(x, r, level, conservative=conservative, paired=paired)
    mg = margin_of(summary)
    m = mg.value
    named = f"{confidence_of(level)} interval [{low:+.3g}, {high:+.3g}]" + (
        ", paired by seed" if paired else ""
    )
    stated = f"gap {size(gap, mg.reference_mean)}, {named}"
    args = (gap, low, high, m)
    word = classify(low, high, m)
    if word in (WORSE, BETTER, LIKE):
        return Verdict(word, stated, *args)
    if word != NOT_KNOWN:
        return Verdict(word, named, *args)
    seeds = min(len(x), len(r))
    needed = mode_seeds_needed(x, r, m, paired=paired)
    count = f"more than {MAX_SEEDS}" if needed > MAX_SEEDS else str(needed)
    more = f"; {count} seeds per mode would decide it" if needed > seeds else ""
    return Verdict(NOT_KNOWN, f"{stated} crosses the margin{more}", *args, needed=needed)


def confidence_of(level: float) -> str:
    """The interval two one-sided tests at `level` give, as a report names it: `90%`."""
    return f"{100 * (1 - 2 * level):.4g}%"


def missed(summary: pd.DataFrame, mode: str, goal: float) -> str:
    """Which seeds of `mode` did not reach the target and why, or "" where every seed did: the
    test judges the mean of the seeds, and one seed may lie above the target while the mean
    lies inside the margin."""
    mine = summary[(summary["mode"] == mode) & (summary["status"] == "ok")]
    out = mine[mine["best_loss"] > goal]
    if out.empty:
        return ""
    seeds = ", ".join(f"seed {int(r.seed)} ({r.best_loss:.4g})" for r in out.itertuples())
    return (
        f"{seeds} ended above the target {goal:.4g}: the test judges the mean of the seeds, "
        "and one seed's spread may carry it past the target"
    )


def fastest_to_target(times: pd.DataFrame) -> timing.Fastest | None:
    """The fastest modes to the target, by `bench.verdicts.timing.fastest`'s rule. `times`
    has per mode `mean_s`, `low_s` and `high_s` (its time to the target: mean, and the seeds'
    fewest steps × the step time's p10 to the most × its p90) and `noisy` (its step time's IQR
    over `NOISY_IQR_OVER_MEDIAN` of its median). None where no mode has a time. The rows
    come back with their own columns; the reason's unit is seconds, not ms."""
    if times.empty:
        return None
    rows = times.assign(total_ms=times["mean_s"], total_ms_p10=times["low_s"],
                        total_ms_p90=times["high_s"])  # fmt: skip
    if "iqr_share" in times:  # the step time's IQR, as a share, carried to the time to target
        rows = rows.assign(total_ms_iqr=times["iqr_share"] * times["mean_s"])
    found = timing.fastest(rows)
    return timing.Fastest(found.rows, found.tie, found.reason.replace(" ms", " s"))
