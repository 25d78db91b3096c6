"""The Answer on bfloat16: its gradient error against scaled fp16's (the README quotes it)."""

from __future__ import annotations

import pandas as pd

from bench.ground.catalog import autocast_of


def bf16_against_fp16_error(census: pd.DataFrame) -> tuple[float, float] | None:
    """bf16 autocast's and scaled fp16's median error against fp32; None if one is missing."""
    if census.empty:
        return None
    bf = census[census["mode"] == autocast_of("bfloat16")]["rel_err"].median()
    fp = census[census["mode"] == autocast_of("float16")]["rel_err"].median()
    return (bf, fp) if bf == bf and fp == fp and fp > 0 else None


LOST = 0.5
"""A median relative error this large is of the gradient's own order: its direction is lost."""


def lost_direction(bf16_error: float) -> str | None:
    """Why bf16's error says nothing of its mantissa where it is `LOST`; else None."""
    if bf16_error < LOST:
        return None
    return (
        "errors of the order of the gradient itself (a zero gradient's is 1) say that its "
        "direction, not a few bits, was lost on the way back through the network, so this ratio "
        "says little about the two formats' mantissas"
    )


def bf16_sentences(census: pd.DataFrame) -> list[str]:
    """bf16's gradient error against scaled fp16's, and why: its range, and its mantissa."""
    errors = bf16_against_fp16_error(census)
    if errors is None:
        return []
    bf, fp = errors
    why = (
        lost_direction(bf)
        or "bf16 keeps float32's range, so it needs no scaler, but has 3 fewer mantissa bits"
    )
    return [
        f"**What bf16 gives up.** The median relative error of a gradient tensor against fp32 "
        f"is {bf:.2e} with bf16 and {fp:.2e} with scaled fp16, {bf / fp:.1f} times larger: "
        f"{why}."
    ]
