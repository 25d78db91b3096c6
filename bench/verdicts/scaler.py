"""GradScaler "needed": the rule that reads the GradScaler check (or a numerics study's census),
by the share of the gradient's norm float16 flushes without the scaler (never by counting
elements), and the training of float16 with and without the scaler. Pandas only."""

from __future__ import annotations

import pandas as pd

from bench.verdicts.training import (
    LIKE,
    MIN_ELEMENTS,
    NEEDED,
    NO_FIX,
    NOT_KNOWN,
    NOT_NEEDED,
    REFERENCE,
    UNSTABLE_AGAINST,
    UNSTABLE_RISE,
    WORSE,
    Verdict,
    trains_like_fp32,
)

FLUSHED_NORM_LIMIT = 0.10
"""A gradient is harmed when more than this share of its norm flushes to zero (10% of the norm
is 1% of the squared norm). The flushed and the kept elements are disjoint, so a step along the
kept gradient keeps 1 - s**2 of the first-order loss decrease the true gradient gives: at 10%, it
gives up 1%, the study's margin (`MARGIN_SHARE`), and turns by under 6 degrees. Adam rescales each
element, which this bound does not cover; the training comparison beside it does."""


def _unstable(runs: pd.DataFrame, against: pd.DataFrame) -> pd.DataFrame:
    """Finished `runs` whose final held-out loss ended `UNSTABLE_RISE` above their best, and
    rose `UNSTABLE_AGAINST` × as far as any finished run of `against`."""
    ok = runs[runs["status"] == "ok"]
    other = against[against["status"] == "ok"]
    base = float((other["final_loss"] - other["best_loss"]).max()) if len(other) else 0.0
    rise = ok["final_loss"] - ok["best_loss"]
    return ok[(rise > UNSTABLE_RISE * ok["best_loss"]) & (rise > UNSTABLE_AGAINST * base)]


def _elements(deciding: pd.DataFrame, tensor: str, step: int) -> str:
    """What the check says of `tensor`'s elements at `step` without the scaler: the share that
    flushes to zero and the share that turns subnormal (kept at reduced precision). Context, not
    evidence; checks that predate the split say the zero share was not measured."""
    if "zero_unscaled" not in deciding or deciding["zero_unscaled"].isna().all():
        return "the share of elements that flush to zero was not measured"
    w = deciding[(deciding["tensor"] == tensor) & (deciding["step"] == step)]
    w = w.dropna(subset=["zero_unscaled"])
    if w.empty:
        return f"the share of {tensor}'s elements that flush to zero was not measured"
    r = w.iloc[0]
    return (
        f"{r['zero_unscaled'] * 100:.4g}% of {tensor}'s gradient elements flush to zero and "
        f"{r['subnormal_unscaled'] * 100:.4g}% turn subnormal, kept at reduced precision"
    )


def _overflowed(checks: pd.DataFrame) -> str:
    """The checked steps at whose scale the scaled gradient overflowed, as words after the
    steps checked (empty where none did, or the check predates the column): GradScaler skips
    such a step, and its overflowed elements count as neither kept nor a sign of need."""
    if "overflow" not in checks:
        return ""
    over = checks[checks["overflow"].astype("boolean").fillna(False).astype(bool)]
    if over.empty:
        return ""
    steps, tensors = sorted({int(s) for s in over["step"]}), len(set(over["tensor"]))
    return (
        f"; at {'step' if len(steps) == 1 else 'steps'} {', '.join(map(str, steps))} the "
        f"scaled gradient overflowed in {tensors} {'tensor' if tensors == 1 else 'tensors'} "
        "(GradScaler skips such a step; what overflowed counts as not kept)"
    )


def scaler_needed(
    checks: pd.DataFrame, summary: pd.DataFrame, scaled: str, bare: str, *, synthetic: bool
) -> Verdict:
    """Whether float16 (`scaled` with GradScaler, `bare` without) needs the scaler, from the
    GradScaler check and from training (docs/quality.md states the rule)."""
    evidence, deciding = [], checks[checks["numel"] >= MIN_ELEMENTS] if len(checks) else checks
    seen = (
        f"checked at steps {', '.join(str(int(s)) for s in sorted(set(checks['step'])))}"
        f"{_overflowed(checks)}"
        if len(checks)
        else "no GradScaler check"
    )
    elements = ""
    if len(deciding):
        worst = deciding.loc[deciding["kept_by_scaler"].idxmax()]
        elements = _elements(deciding, worst["tensor"], int(worst["step"]))
        if worst["kept_by_scaler"] > FLUSHED_NORM_LIMIT:
            evidence.append(
                f"without it {worst['kept_by_scaler'] * 100:.4g}% of {worst['tensor']}'s gradient "
                f"norm flushes to zero and the scaler keeps it (step {int(worst['step'])}; "
                f"{elements})"
            )
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
        top = deciding["kept_by_scaler"].max() if len(deciding) else float("nan")
        counted = "" if elements.endswith("not measured") else f"; {elements}"
        norm = (
            f"; by the norm rule alone it is not: it keeps at most {top * 100:.4g}% of a "
            f"gradient's norm that float16 flushes without it (step {int(worst['step'])}"
            f"{counted}; over {FLUSHED_NORM_LIMIT:.0%} decides)"
            if len(deciding) and top <= FLUSHED_NORM_LIMIT
            else ""
        )
        return Verdict(NEEDED, "; ".join(evidence) + norm + f"; {seen}")
    if len(deciding):
        lossy = deciding[deciding["lost_unscaled"] > FLUSHED_NORM_LIMIT]
        if len(lossy):
            w = lossy.loc[lossy["lost_scaled"].idxmax()]
            return Verdict(
                NO_FIX,
                f"{w['tensor']} loses {w['lost_unscaled'] * 100:.4g}% of its gradient norm without "
                f"the scaler and {w['lost_scaled'] * 100:.4g}% with it",
            )
        top = deciding["lost_unscaled"].max()
        lost = (
            f"at most {top * 100:.4g}% of any gradient's norm (tensors of {MIN_ELEMENTS}+ "
            f"elements) flushes to zero without it ({seen}; {elements})"
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


def numerics_scaler_needed(
    census: pd.DataFrame, diverged: dict[str, set[int]], scaled: str, bare: str
) -> tuple[str, list[int], str]:
    """The numerics study's answer on GradScaler: (verdict word, the batch sizes where training
    without it diverged and with it did not, and the reason in words). `census`: the study's
    census rows (`flushed_norm` empty in a study older than it); `diverged`: per mode, the batch
    sizes where some run diverged. Needed where training without the scaler diverged and with it
    did not, or where more than `FLUSHED_NORM_LIMIT` of some gradient's norm (tensors of
    `MIN_ELEMENTS`+ elements) flushes without it and not with it; otherwise not known: a fixed
    loss gap over one or two seeds of a synthetic task is no equivalence test."""
    need = sorted(diverged.get(bare, set()) - diverged.get(scaled, set()))
    if need:
        return NEEDED, need, "training without it diverged and training with it did not"
    keys = ["batch_size", "step", "tensor"]
    if "flushed_norm" not in census or census["flushed_norm"].isna().all():
        return (
            NOT_KNOWN,
            [],
            (
                "training without it did not diverge, its census did not record the share of each "
                "gradient's norm that float16 flushes (only the share of elements)"
            ),
        )
    big = census[census["numel"] >= MIN_ELEMENTS]
    pair = big[big["mode"] == bare].merge(
        big[big["mode"] == scaled][[*keys, "flushed_norm"]], on=keys, suffixes=("", "_scaled")
    )
    pair = pair.dropna(subset=["flushed_norm", "flushed_norm_scaled"])
    if pair.empty:
        return NOT_KNOWN, [], "training without it did not diverge, and no census row pairs it"
    kept = pair["flushed_norm"] - pair["flushed_norm_scaled"]
    w = pair.loc[kept.idxmax()]
    where = (
        f"{w['flushed_norm'] * 100:.4g}% of {w['tensor']}'s gradient norm flushes to zero without "
        f"it at batch {int(w['batch_size'])}, step {int(w['step'])}, and "
        f"{w['flushed_norm_scaled'] * 100:.4g}% with it"
    )
    if kept.max() > FLUSHED_NORM_LIMIT:
        return NEEDED, [], where
    return (
        NOT_KNOWN,
        [],
        (
            f"training without it did not diverge, and where it keeps the most, {where} "
            f"(tensors of {MIN_ELEMENTS}+ elements): under the {FLUSHED_NORM_LIMIT:.0%} that "
            "decides"
        ),
    )
