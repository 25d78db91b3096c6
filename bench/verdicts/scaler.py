"""GradScaler "needed": the rule of `bench.verdicts.training` that reads the GradScaler check
and the training of float16 with and without the scaler (the module docstring of
`bench.verdicts.training` states it). Pandas only."""

from __future__ import annotations

import pandas as pd

from bench.verdicts.training import (
    LIKE,
    MIN_ELEMENTS,
    NEEDED,
    NO_FIX,
    NORM_LIMIT,
    NOT_KNOWN,
    NOT_NEEDED,
    REFERENCE,
    UNSTABLE_AGAINST,
    UNSTABLE_RISE,
    WORSE,
    Verdict,
    trains_like_fp32,
)


def _unstable(runs: pd.DataFrame, against: pd.DataFrame) -> pd.DataFrame:
    """Finished `runs` whose final held-out loss ended `UNSTABLE_RISE` above their best, and
    rose `UNSTABLE_AGAINST` × as far as any finished run of `against`."""
    ok = runs[runs["status"] == "ok"]
    other = against[against["status"] == "ok"]
    base = float((other["final_loss"] - other["best_loss"]).max()) if len(other) else 0.0
    rise = ok["final_loss"] - ok["best_loss"]
    return ok[(rise > UNSTABLE_RISE * ok["best_loss"]) & (rise > UNSTABLE_AGAINST * base)]


def _elements(deciding: pd.DataFrame) -> tuple[str, bool]:
    """(what the check says of the elements float16 flushes or makes subnormal without the
    scaler, whether that is evidence for it); checks that predate the count say so."""
    if "flushed_unscaled" not in deciding or deciding["flushed_unscaled"].isna().all():
        return "per-element flush share not measured", False
    d = deciding.dropna(subset=["flushed_unscaled"])
    kept = d["flushed_unscaled"] - d.get("flushed_scaled", 0.0)
    w = d.loc[kept.idxmax()]
    text = (
        f"without it {w['flushed_unscaled'] * 100:.4g}% of {w['tensor']}'s gradient elements "
        f"flush or turn subnormal in float16 (step {int(w['step'])})"
    )
    return text, bool(kept.max() > NORM_LIMIT)


def scaler_needed(
    checks: pd.DataFrame, summary: pd.DataFrame, scaled: str, bare: str, *, synthetic: bool
) -> Verdict:
    """Whether float16 (`scaled` with GradScaler, `bare` without) needs the scaler, from the
    GradScaler check and from training (see the module docstring)."""
    evidence, deciding = [], checks[checks["numel"] >= MIN_ELEMENTS] if len(checks) else checks
    seen = (
        f"checked at steps {', '.join(str(int(s)) for s in sorted(set(checks['step'])))}"
        if len(checks)
        else "no GradScaler check"
    )
    elements = ""
    if len(deciding):
        worst = deciding.loc[deciding["kept_by_scaler"].idxmax()]
        if worst["kept_by_scaler"] > NORM_LIMIT:
            evidence.append(
                f"without it {worst['kept_by_scaler']:.1%} of {worst['tensor']}'s gradient norm "
                f"underflows to zero and the scaler keeps it (step {int(worst['step'])})"
            )
        elements, decides = _elements(deciding)
        if decides:
            evidence.append(elements)
    ran = summary[summary["mode"] == bare]
    scaled_runs = summary[summary["mode"] == scaled]
    diverged = ran[ran["status"] == "diverged"]
    vs = None
    if len(diverged) and not (scaled_runs["status"] == "diverged").any():
        steps = ", ".join(str(int(s)) for s in diverged["diverged_at_step"])
        evidence.append(
            f"without it training diverged in {len(diverged)} of {len(ran)} seeds (step {steps})"
        )
    elif not synthetic and len(ran) and len(scaled_runs):
        vs = trains_like_fp32(
            pd.concat([ran, scaled_runs.assign(mode=REFERENCE)]), bare, synthetic=False
        )
        if vs.verdict == WORSE:
            evidence.append(f"without it training ends worse than with it ({vs.reason})")
    if len(ran) and "final_loss" in ran:
        up = _unstable(ran, scaled_runs)
        if len(up):
            rises = ", ".join(
                f"seed {int(r.seed)} {r.best_loss:.3g} (step {int(r.best_step)}) to "
                f"{r.final_loss:.3g}"
                for r in up.itertuples()
            )
            evidence.append(f"without it unstable, no NaN: held-out loss from its best {rises}")
    if evidence:
        extra = f"; {elements}" if elements and elements not in evidence else ""
        return Verdict(NEEDED, "; ".join(evidence) + extra + f"; {seen}")
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
            f"at most {top * 100:.4g}% of any gradient's norm (tensors of {MIN_ELEMENTS}+ "
            f"elements) underflows without it ({seen}; {elements})"
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
