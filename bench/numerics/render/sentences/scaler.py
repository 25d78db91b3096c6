"""The Answer on GradScaler: the census with and without it, convergence without it, the verdict,
and its cost in step time; the underflow threshold is stated here."""

from __future__ import annotations

import pandas as pd

from bench.ground.catalog import fp16_pair, reference
from bench.numerics.analysis.runs import LOSS_GAP, Versus, diverged, measured, versus
from bench.verdicts import scaler as scaler_rule
from bench.verdicts.training import NEEDED

FLUSH_LIMIT = 0.01
"""Above this share of a tensor flushed the Underflow sentence names it (the verdict weighs
the norm, `bench.verdicts.scaler`)."""


def _norm_clause(census: pd.DataFrame) -> str:
    """The largest share of a gradient's norm fp16 without a scaler flushed, if measured."""
    _, bare = fp16_pair()
    rows = census[census["mode"] == bare]
    if "flushed_norm" not in rows or rows["flushed_norm"].isna().all():
        return " The share of each gradient's norm that they carry was not measured by this census."
    w = rows.loc[rows["flushed_norm"].idxmax()]
    return (
        f" The most of a gradient's norm it flushes is {w['flushed_norm'] * 100:.4g}% "
        f"({w['tensor']} at batch {int(w['batch_size'])}, step {int(w['step'])})."
    )


def _flushing(census: pd.DataFrame) -> list[tuple[int, pd.Series]]:
    """(batch size, its most flushed row) of fp16 without a scaler, above FLUSH_LIMIT."""
    _, bare = fp16_pair()
    out = []
    for bs, g in census[census["mode"] == bare].groupby("batch_size"):
        worst = g.loc[g["flushed"].idxmax()]
        if worst["flushed"] > FLUSH_LIMIT:
            out.append((int(bs), worst))
    return out


def _worse(summary: pd.DataFrame) -> tuple[list[int], list[tuple[int, Versus]]]:
    """(batch sizes both fp32 and bare fp16 trained, those where bare fp16 was worse)."""
    _, bare = fp16_pair()
    compared, worse = [], []
    for bs in sorted(summary["batch_size"].unique()):
        vs = versus(summary, bare, bs, reference())
        if vs is None:
            continue  # only batch sizes where both were trained are compared
        compared.append(int(bs))
        if not vs.within:
            worse.append((int(bs), vs))
    return compared, worse


def _scaled_worse(summary: pd.DataFrame) -> str:
    """Where fp16 with GradScaler itself ended worse than fp32 (a clause, maybe empty)."""
    scaled, _ = fp16_pair()
    parts = []
    for bs in sorted(summary["batch_size"].unique()):
        vs = versus(summary, scaled, bs, reference())
        if vs is not None and not vs.within:
            parts.append(f"{vs.worse} of {vs.seeds} seeds at batch {int(bs)}")
    if not parts:
        return ""
    return (
        f" With GradScaler, fp16 also ended more than {LOSS_GAP:.0%} above fp32's worst seed in "
        f"{'; '.join(parts)}."
    )


def _in_context(census: pd.DataFrame, summary: pd.DataFrame) -> str:
    """Where scaled fp16 flushed most, and whether its runs there diverged (maybe empty)."""
    scaled_mode, _ = fp16_pair()
    scaled = census[census["mode"] == scaled_mode]
    if scaled.empty or "loss" not in scaled or scaled["loss"].isna().all():
        return ""
    w = scaled.loc[scaled["flushed"].idxmax()]
    out = (
        f" ({w['tensor']} at batch {int(w['batch_size'])}, step {int(w['step'])}, training loss "
        f"{w['loss']:.3g}, loss scale {w['loss_scale']:g}"
    )
    runs = measured(summary)
    runs = runs[(runs["mode"] == scaled_mode) & (runs["batch_size"] == w["batch_size"])]
    if len(runs):
        bad = diverged(runs)
        out += (
            f"; {len(bad)} of {len(runs)} {scaled_mode} runs at that batch size diverged"
            if len(bad)
            else f"; no {scaled_mode} run at that batch size diverged"
        )
    return out + ")"


def underflow_sentences(census: pd.DataFrame, summary: pd.DataFrame) -> list[str]:
    """The two tests: fp16 without a scaler's underflow, and its convergence against fp32."""
    scaled_mode, bare = fp16_pair()
    noscale = census[census["mode"] == bare]
    scaled = census[census["mode"] == scaled_mode]
    flushing = _flushing(census)
    worst_scaled = scaled["flushed"].max() if len(scaled) else float("nan")
    context = _in_context(census, summary)
    sizes = ", ".join(str(b) for b in sorted(noscale["batch_size"].unique()))
    out = []
    if noscale.empty:
        out.append(
            "**Underflow.** Not measured: the census has no rows of fp16 without a scaler "
            "(see the jobs that failed)."
        )
    elif flushing:
        where = "; ".join(
            f"{bs} ({w['flushed']:.1%} of {w['tensor']} at step {int(w['step'])})"
            for bs, w in flushing
        )
        out.append(
            f"**Underflow.** Without a scaler, float16 flushes more than {FLUSH_LIMIT:.0%} of the "
            f"elements of some gradient tensor to zero at batch size {where}, of the batch sizes "
            f"measured ({sizes}). With GradScaler the worst share flushed anywhere is "
            f"{worst_scaled:.2%}{context}.{_norm_clause(census)}"
        )
    else:
        out.append(
            f"**Underflow.** Without a scaler, float16 flushes no more than {FLUSH_LIMIT:.0%} of "
            f"the elements of any gradient tensor at any batch size measured ({sizes}); the worst "
            f"share is {noscale['flushed'].max():.2%}. With GradScaler it is "
            f"{worst_scaled:.2%}{context}.{_norm_clause(census)}"
        )
    compared, worse = _worse(summary)
    also = _scaled_worse(summary)
    if worse:
        where = "; ".join(
            f"{bs} ({vs.worse} of {vs.seeds} seeds; mean {vs.loss:.3g} against fp32's {vs.ref:.3g})"
            for bs, vs in worse
        )
        out.append(
            f"**Convergence.** fp16 without a scaler ends with a training loss more than "
            f"{LOSS_GAP:.0%} above fp32's worst seed at batch size {where}.{also}"
        )
    elif compared:
        out.append(
            f"**Convergence.** fp16 without a scaler ends within {LOSS_GAP:.0%} of fp32's "
            f"training loss (of its worst seed) at every batch size where both were trained "
            f"({', '.join(map(str, compared))}).{also}"
        )
    else:
        out.append("**Convergence.** This run did not train both fp32 and fp16 without a scaler.")
    return out


def _then_diverged(summary: pd.DataFrame) -> str:
    """The verdict's last clause: where fp16 without a scaler trained and then diverged."""
    runs = measured(summary)
    if runs.empty:
        return ""
    _, bare = fp16_pair()
    bad = diverged(runs[runs["mode"] == bare])
    if bad.empty:
        return ""
    where = "; ".join(
        f"at batch {int(bs)}, step "
        + " and ".join(str(int(v)) for v in sorted(b["diverged_at_step"]))
        for bs, b in bad.groupby("batch_size")
    )
    return f" Without one, training learned at first and then diverged ({where})."


def verdict_sentences(census: pd.DataFrame, summary: pd.DataFrame) -> list[str]:
    """The answer, as `bench.verdicts.scaler.numerics_scaler_needed` decides it."""
    scaled, bare = fp16_pair()
    runs = measured(summary)
    bad = {
        mode: set(diverged(runs[runs["mode"] == mode])["batch_size"]) if len(runs) else set()
        for mode in (scaled, bare)
    }
    word, need, why = scaler_rule.numerics_scaler_needed(census, bad, scaled, bare)
    question = "**So is GradScaler needed with float16?**"
    if word == NEEDED and need:
        return [
            f"{question} On this synthetic task, yes at batch size {', '.join(map(str, need))}: "
            "training without it diverged and training with it did not. float32 `param.grad` "
            "does not help, because the gradients are rounded to float16 before the cast makes "
            f"them float32.{_then_diverged(summary)}"
        ]
    if word == NEEDED:
        return [f"{question} On this synthetic task, yes: {why}."]
    return [
        f"{question} Not known from this study: {why}; and a fixed loss gap over one or two "
        "seeds of a synthetic task is no equivalence test. A time-to-quality study on real data "
        "decides it (docs/quality.md)."
    ]
