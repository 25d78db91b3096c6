"""The rules that judge how a recipe trains: the quality target, "trains like fp32", GradScaler
"needed", and the fastest recipe to the target. Pandas and scipy only: a finished study's tables
in, a `Verdict` out.

- **The target** is fp32's worst seed's best held-out loss: every fp32 seed reaches it. There is
  none where fp32 has fewer than `MIN_SEEDS` seeds or did not learn (a seed whose best held-out
  loss is not at least `LEARNED_DROP` below its loss at step 0).
- **Trains like fp32** is an equivalence test (two one-sided tests, Welch's t): the 90% interval
  of the difference of mean best held-out losses (recipe minus fp32) lies within ±margin, the
  margin `MARGIN_SPREAD` × fp32's seed-to-seed standard deviation, at least `MARGIN_FLOOR` of
  fp32's mean. An interval past +margin is "worse" (with the gap), past −margin "better", and one
  that straddles the margin "not known". Synthetic data, too few seeds, an fp32 that did not
  learn: "not known", with the reason; a seed that diverged: "worse".
- **GradScaler needed** reads the GradScaler check (`bench.quality.train.Run.scaler_check`): the
  share of each gradient's norm that float16 flushes to zero without the scaler and keeps with
  it, on tensors of at least `MIN_ELEMENTS` elements (a few elements cannot decide), and whether
  fp16 without the scaler diverged or trained worse than with it. "Not needed" takes both: no
  deciding tensor loses norm, and fp16 without the scaler trains like fp16 with it on real data.
- **Fastest to the target**: only where the recipes' intervals (the seeds' range of steps to the
  target, times the step time's p10–p90) do not overlap; otherwise tied within noise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

REFERENCE = "fp32"
MIN_SEEDS = 3
"""Seeds a side needs before the equivalence test decides anything."""
LEARNED_DROP = 0.25
"""fp32 learned when its best held-out loss is at least this share below its loss at step 0."""
MARGIN_SPREAD = 2.0
MARGIN_FLOOR = 0.01
"""The equivalence margin: MARGIN_SPREAD × fp32's seed standard deviation, at least MARGIN_FLOOR
of fp32's mean best held-out loss."""
CONFIDENCE = 0.90
"""Two one-sided tests at 5% each: a 90% interval of the difference."""
NORM_LIMIT = 0.01
"""A gradient loses to underflow when more than this share of its norm is flushed to zero."""
MIN_ELEMENTS = 1024
"""Tensors smaller than this cannot decide the GradScaler verdict."""

LIKE, WORSE, BETTER, NOT_KNOWN = "trains like fp32", "worse", "better", "not known"
NEEDED, NOT_NEEDED, NO_FIX = "needed", "not needed", "does not fix it"


@dataclass(frozen=True)
class Verdict:
    verdict: str
    reason: str
    gap: float = math.nan
    """Recipe minus fp32, mean best held-out loss."""
    low: float = math.nan
    high: float = math.nan
    margin: float = math.nan


def per_run(curves: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (mode, seed): held-out loss at step 0, best (and its step), final; best and
    final accuracy; the run's status and steps."""
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
                "best_loss": float(best["heldout_loss"]) if best is not None else math.nan,
                "best_step": int(best["step"]) if best is not None else -1,
                "final_loss": float(g["heldout_loss"].iloc[-1]),
                "best_accuracy": float(finite["heldout_accuracy"].max()) if len(finite) else 0.0,
                "final_accuracy": float(g["heldout_accuracy"].iloc[-1]),
            }
        )
    out = pd.DataFrame(rows, columns=["mode", "seed", "initial_loss", "best_loss", "best_step",
                                      "final_loss", "best_accuracy", "final_accuracy"])  # fmt: skip
    keep = ["mode", "seed", "status", "steps", "diverged_at_step", "skipped_steps"]
    return out.merge(runs[[c for c in keep if c in runs]], on=["mode", "seed"], how="left")


def target(summary: pd.DataFrame) -> tuple[float | None, str]:
    """(the held-out loss target, what it is) or (None, why there is none)."""
    ref = summary[(summary["mode"] == REFERENCE) & (summary["status"] == "ok")]
    if len(ref) < MIN_SEEDS:
        return None, f"{REFERENCE} finished {len(ref)} seeds, fewer than {MIN_SEEDS}"
    unlearned = ref[ref["best_loss"] > (1 - LEARNED_DROP) * ref["initial_loss"]]
    if len(unlearned):
        r = unlearned.iloc[0]
        return None, (
            f"{REFERENCE} did not learn: seed {r['seed']}'s best held-out loss "
            f"{r['best_loss']:.4g} is not {LEARNED_DROP:.0%} below its "
            f"{r['initial_loss']:.4g} at step 0"
        )
    return float(ref["best_loss"].max()), f"{REFERENCE}'s worst seed's best held-out loss"


def steps_to(curves: pd.DataFrame, goal: float) -> pd.DataFrame:
    """(mode, seed, steps): the first evaluated step whose held-out loss is at or below `goal`
    (NaN where none was)."""
    rows = []
    for (mode, seed), g in curves.groupby(["mode", "seed"], sort=False):
        hit = g[g["heldout_loss"] <= goal]["step"]
        rows.append({"mode": mode, "seed": int(seed), "steps": hit.min() if len(hit) else math.nan})
    return pd.DataFrame(rows, columns=["mode", "seed", "steps"])


def interval(x: pd.Series, ref: pd.Series) -> tuple[float, float, float]:
    """(mean(x) − mean(ref), and its `CONFIDENCE` interval by Welch's t)."""
    gap = float(x.mean() - ref.mean())
    vx, vr = x.var(ddof=1) / len(x), ref.var(ddof=1) / len(ref)
    se = math.sqrt(vx + vr)
    if se == 0:
        return gap, gap, gap
    df = (vx + vr) ** 2 / (vx**2 / (len(x) - 1) + vr**2 / (len(ref) - 1))
    half = stats.t.ppf(1 - (1 - CONFIDENCE) / 2, df) * se
    return gap, gap - half, gap + half


def margin(ref: pd.Series) -> float:
    return max(MARGIN_SPREAD * float(ref.std(ddof=1)), MARGIN_FLOOR * float(ref.mean()))


def trains_like_fp32(summary: pd.DataFrame, mode: str, *, synthetic: bool) -> Verdict:
    """Whether `mode` trains like fp32 on this study's data (see the module docstring)."""
    if mode == REFERENCE:
        return Verdict(LIKE, "it is the reference")
    if synthetic:
        return Verdict(NOT_KNOWN, "synthetic data: nothing real to learn")
    mine = summary[summary["mode"] == mode]
    ref = summary[(summary["mode"] == REFERENCE) & (summary["status"] == "ok")]
    goal, why = target(summary)
    if goal is None:
        return Verdict(NOT_KNOWN, why)
    diverged = mine[mine["status"] == "diverged"]
    if len(diverged):
        steps = ", ".join(str(int(s)) for s in diverged["diverged_at_step"])
        return Verdict(WORSE, f"diverged in {len(diverged)} of {len(mine)} seeds (step {steps})")
    done = mine[mine["status"] == "ok"]
    if len(done) < MIN_SEEDS:
        seeds = "1 seed" if len(done) == 1 else f"{len(done)} seeds"
        return Verdict(NOT_KNOWN, f"{seeds} finished, fewer than {MIN_SEEDS}")
    gap, low, high = interval(done["best_loss"], ref["best_loss"])
    m = margin(ref["best_loss"])
    stated = f"gap {gap:+.3g}, 90% interval [{low:+.3g}, {high:+.3g}], margin ±{m:.3g}"
    if -m < low and high < m:
        return Verdict(LIKE, stated, gap, low, high, m)
    if low > m:
        return Verdict(WORSE, stated, gap, low, high, m)
    if high < -m:
        return Verdict(BETTER, stated, gap, low, high, m)
    missed = done[done["best_loss"] > goal]
    budget = (
        f"; {len(missed)} of {len(done)} seeds did not reach the target within the step budget"
        if len(missed)
        else ""
    )
    return Verdict(
        NOT_KNOWN, f"the interval reaches past the margin: {stated}{budget}", gap, low, high, m
    )


def scaler_needed(
    checks: pd.DataFrame, summary: pd.DataFrame, scaled: str, bare: str, *, synthetic: bool
) -> Verdict:
    """Whether float16 (`scaled` with GradScaler, `bare` without) needs the scaler, from the
    GradScaler check and from training (see the module docstring)."""
    evidence, deciding = [], checks[checks["numel"] >= MIN_ELEMENTS] if len(checks) else checks
    if len(deciding):
        worst = deciding.loc[deciding["kept_by_scaler"].idxmax()]
        if worst["kept_by_scaler"] > NORM_LIMIT:
            evidence.append(
                f"without it {worst['kept_by_scaler']:.1%} of {worst['tensor']}'s gradient norm "
                f"underflows to zero and the scaler keeps it (step {int(worst['step'])})"
            )
    ran = summary[summary["mode"] == bare]
    scaled_runs = summary[summary["mode"] == scaled]
    diverged = ran[ran["status"] == "diverged"]
    vs = None
    if len(diverged) and not (scaled_runs["status"] == "diverged").any():
        evidence.append(f"without it training diverged in {len(diverged)} of {len(ran)} seeds")
    elif not synthetic and len(ran) and len(scaled_runs):
        vs = trains_like_fp32(
            pd.concat([ran, scaled_runs.assign(mode=REFERENCE)]), bare, synthetic=False
        )
        if vs.verdict == WORSE:
            evidence.append(f"without it training ends worse than with it ({vs.reason})")
    if evidence:
        return Verdict(NEEDED, "; ".join(evidence))
    if len(deciding):
        lossy = deciding[deciding["lost_unscaled"] > NORM_LIMIT]
        if len(lossy):
            w = lossy.loc[lossy["lost_scaled"].idxmax()]
            return Verdict(
                NO_FIX,
                f"{w['tensor']} loses {w['lost_unscaled']:.1%} of its gradient norm without the "
                f"scaler and {w['lost_scaled']:.1%} with it",
            )
        top = deciding["lost_unscaled"].max()
        lost = (
            f"at most {top:.2%} of any gradient's norm (tensors of {MIN_ELEMENTS}+ elements) "
            "underflows without it"
        )
        # A few checked steps cannot rule out the steps between them: "not needed" also needs
        # fp16 without the scaler to train like fp16 with it, on real data.
        if vs is None or vs.verdict != LIKE:
            why = (
                "the task is synthetic"
                if synthetic
                else "fp16 without it was not trained beside fp16 with it"
                if vs is None
                else f"fp16 without it against fp16 with it: {vs.verdict} ({vs.reason})"
            )
            return Verdict(NOT_KNOWN, f"{lost}, but {why}")
        return Verdict(
            NOT_NEEDED, f"{lost}, and fp16 without it trains like fp16 with it ({vs.reason})"
        )
    if len(checks):
        return Verdict(
            NOT_KNOWN, f"only tensors of fewer than {MIN_ELEMENTS} elements were checked"
        )
    return Verdict(NOT_KNOWN, "no GradScaler check and no training without the scaler")


def fastest_to_target(times: pd.DataFrame) -> tuple[list[str], bool]:
    """(the fastest recipes to the target, whether they are tied). `times` has per mode
    `low_s` and `high_s`: the interval of its time to the target. The fastest by its low end wins
    alone only where its interval ends before every other's begins."""
    if times.empty:
        return [], False
    order = times.sort_values("low_s")
    first = order.iloc[0]
    tied = order[order["low_s"] <= first["high_s"]]
    return list(tied["mode"]), len(tied) > 1
