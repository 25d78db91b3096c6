"""The speed verdict of the `sweep` driver: each mode's runs against the reference mode's,
by the rounds judge (`bench.verdicts.rounds.judge_family`), one observation per run (a run is
one fresh process: cutting it into windows would count one process's luck several times;
docs/own-loop.md). Pure: numpy, no torch, no pandas."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from bench.verdicts import rounds
from bench.verdicts.defaults import CONFIDENCE, MIN_EFFECT, MIN_ROUNDS

REFERENCE = "reference"
"""The verdict of the mode the others are judged against."""
NOT_KNOWN = "not known"
"""The verdict of a mode without a timed run, or against a reference without one."""


def _steps(steps: Sequence[float]) -> np.ndarray:
    return np.asarray(steps, dtype=float)


def speed(
    runs: Mapping[str, Sequence[Sequence[float]]],
    reference: str,
    *,
    min_effect: float = MIN_EFFECT,
    confidence: float = CONFIDENCE,
) -> dict[str, dict[str, object]]:
    """mode -> its speed verdict against `reference`: `runs` holds, per mode, each finished
    run's timed step times (ms), a step GradScaler skipped NaN. Each run is one round
    (`rounds.judge_rounds`, its median over its training steps); a verdict is
    `rounds.rounds_verdict`'s dict (`ratio` is the mode's time over the reference's, the
    geometric mean of the runs' medians), after Holm's correction across the modes; with too
    few runs it says how many the judge needs (`why`).
    The reference is `{"verdict": "reference"}`; a side without a timed run is `not known`."""
    # A run with no training step (every timed step skipped) is no observation.
    values = {
        mode: [r for r in map(_steps, steps) if (~np.isnan(r)).any()]
        for mode, steps in runs.items()
    }
    out: dict[str, dict[str, object]] = {}
    judged = []
    for mode in runs:
        if mode == reference:
            out[mode] = {"verdict": REFERENCE}
        elif not values[mode] or not values.get(reference):
            out[mode] = {"verdict": NOT_KNOWN, "why": f"no timed run of {mode} or {reference}"}
        else:
            judged.append(mode)
    family = rounds.judge_rounds(
        [(mode, values[reference], values[mode]) for mode in judged],
        min_effect=min_effect,
        confidence=confidence,
    )
    for mode, verdict in zip(judged, family, strict=True):
        if verdict["too_few"]:
            verdict["why"] = (
                f"{len(values[mode])} runs of {mode} and {len(values[reference])} of "
                f"{reference} timed alone: the verdict needs {MIN_ROUNDS} of each "
                f"(--timed-seeds {MIN_ROUNDS}, with as many --seeds)"
            )
        out[mode] = verdict
    return out
