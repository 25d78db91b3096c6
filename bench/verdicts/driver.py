"""The `sweep` driver's speed verdict: each mode's runs timed alone against the reference's, one
observation per run (one fresh process; docs/own-loop.md), by `many_to_one.against_reference`
(a t-test on log run medians, the spread pooled over the modes, Holm's correction over them), look
after look with alpha spent over the looks (`SpeedPlan`, the training rule's spending). No torch."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from bench.verdicts import many_to_one, rounds, sequential
from bench.verdicts.defaults import CONFIDENCE, MIN_EFFECT

REFERENCE = "reference"
"""The verdict of the mode the others are judged against."""
NOT_KNOWN = "not known"
"""The verdict of a mode without a timed run, or against a reference without one."""
MIN_RUNS = 2
"""Timed runs a side below which a mode's speed is `unclear`: one run shows nothing of the
spread; from two a side on, the spread pooled over the modes lets a large effect be called."""
BETWEEN_RUN_SD = 0.090
"""The standard deviation of the log of a run's median step time between fresh runs of one
mode, which the tests and docs/own-loop.md simulate sweeps at: the runs of the committed H200
sweep results/own-loop-h200/20261204T121255Z_NVIDIA-H200_5915cc1_recipes/ (hf_trainer.py, 200
steps; fp32, fp16-amp, bf16-amp at seeds 0-2, each mode once at each position of a round),
pooled over the modes. `python scripts/speed_rule_sim.py` recomputes it from that folder and
says how much of it the position in the round explains."""


@dataclass(frozen=True)
class SpeedPlan:
    """The timed looks of a sweep, fixed before the first: `first` timed runs a side at the
    first look, one more each later look, at most `most`; alpha spent over the looks by
    Pocock's Lan-DeMets function (`bench.verdicts.sequential.spent`, the training rule's)."""

    first: int
    most: int
    confidence: float = CONFIDENCE

    def __post_init__(self) -> None:
        if self.first < 1 or self.most < self.first:
            raise ValueError(f"a speed plan of {self.first} to {self.most} timed runs")

    def runs_at(self, look: int) -> int:
        """Timed runs a side a mode has at `look` (1 for the first) if it was never decided."""
        return min(self.first + look - 1, self.most)

    @property
    def looks(self) -> int:
        """How many looks the plan allows."""
        return self.most - self.first + 1

    def levels(self, taken: int) -> tuple[float, ...]:
        """The two-sided nominal level of each of the first `taken` looks: what Pocock's
        function spends between the look before and this one (the first look: what it spends up
        to it). Their sum is at most alpha, so the chance of a false call at any look is too,
        whatever ties the looks' t statistics together (Bonferroni's inequality). The training
        rule's exact recursion (`sequential.levels`) assumes normal statistics: on t statistics
        of a few runs a side it lets more than alpha through for a single mode
        (results/sessions/speed_rule_sim.txt)."""
        alpha = 1 - self.confidence
        if self.looks == 1:
            return (alpha,) * min(taken, 1)
        spent = [0.0] + [
            sequential.spent(self.runs_at(k) / self.most, alpha, "pocock")
            for k in range(1, min(taken, self.looks) + 1)
        ]
        return tuple(b - a for a, b in itertools.pairwise(spent))

    def record(self) -> dict[str, object]:
        return {"first": self.first, "most": self.most, "confidence": self.confidence}


def _steps(steps: Sequence[float]) -> np.ndarray:
    return np.asarray(steps, dtype=float)


def runs_needed(sd: float, diff: float, level: float, min_effect: float) -> int | None:
    """Timed runs a side that would, about, decide a mode whose runs scatter by `sd` (log) and
    differ from the reference's by `diff`: a test at `level` with 80% power to call `diff` where
    it is beyond `min_effect`, else to put the interval inside +/- `min_effect`. None where
    `diff` sits on the edge (nothing decides it)."""
    edge = math.log1p(min_effect)
    gap = abs(diff) if abs(diff) > edge else edge - abs(diff)
    if not (sd > 0 and gap > 0):
        return None
    z = stats.norm.isf(level / 2) + (stats.norm.isf(0.2) if abs(diff) > edge else 0.0)
    return max(MIN_RUNS, math.ceil(2 * (z * sd / gap) ** 2))


def speed(
    runs: Mapping[str, Sequence[Sequence[float]]],
    reference: str,
    *,
    min_effect: float = MIN_EFFECT,
    confidence: float = CONFIDENCE,
    level: float | None = None,
) -> dict[str, dict[str, object]]:
    """mode -> its speed verdict against `reference` at one look: `runs` holds, per mode, each
    finished run's timed step times (ms), a step GradScaler skipped NaN. Each run is one
    observation (its median over its training steps, `rounds.of_round`); the modes are judged
    together (`many_to_one.against_reference`) at `level` (default 1 - `confidence`). A verdict:
    `ratio` (the mode's time over the reference's, the ratio of the runs' geometric means),
    `ratio_lo`, `ratio_hi`, `p_value`, `p_holm`, `noise` (one run's SD of logs), `df`,
    `rounds_a` (the reference's runs), `rounds_b`, `too_few`, `verdict`, `median_ms_a`,
    `median_ms_b`; with too few runs it says how many the judge needs (`why`).
    The reference is `{"verdict": "reference"}`; a side without a timed run is `not known`."""
    level = 1 - confidence if level is None else level
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
    if not judged:
        return out
    sides = [reference, *judged]
    width = max(len(values[m]) for m in sides)
    logs = np.full((1, len(sides), width), np.nan)
    for k, mode in enumerate(sides):
        logs[0, k, : len(values[mode])] = np.log([rounds.of_round(r) for r in values[mode]])
    got = many_to_one.against_reference(
        logs, level=level, min_effect=min_effect, min_rounds=MIN_RUNS
    )
    ref = values[reference]
    for j, mode in enumerate(judged):
        code = got["verdict"][0, j]
        verdict: dict[str, object] = {
            "median_ms_a": float(np.nanmedian(np.concatenate(ref))),
            "median_ms_b": float(np.nanmedian(np.concatenate(values[mode]))),
            **{key: float(got[name][0, j]) for key, name in (
                ("ratio", "ratio"), ("ratio_lo", "lo"), ("ratio_hi", "hi"), ("p_value", "p"),
                ("p_holm", "p_holm"), ("noise", "sd"), ("df", "df"))},
            "rounds_a": len(ref),
            "rounds_b": len(values[mode]),
            "too_few": bool(got["too_few"][0, j]),
            "verdict": "unclear" if math.isnan(code) else many_to_one.WORDS[code],
            "level": level,
        }  # fmt: skip
        if verdict["too_few"]:
            verdict["why"] = (
                f"{len(values[mode])} runs of {mode} and {len(ref)} of {reference} timed "
                f"alone: the verdict needs {MIN_RUNS} of each"
            )
        out[mode] = verdict
    return out


def speed_over_looks(
    runs: Mapping[str, Sequence[Sequence[float]]],
    looks_of: Mapping[str, Sequence[int]],
    reference: str,
    plan: SpeedPlan | None,
    *,
    min_effect: float = MIN_EFFECT,
    confidence: float = CONFIDENCE,
) -> dict[str, dict[str, object]]:
    """Each mode's speed verdict over a sweep's timed looks: `looks_of[mode][i]` is the look
    (1 for the first) whose timed runs run i joined. Each mode's verdict is `speed`'s at the
    first look that decides it (faster, slower or same), at that look's level from `plan`
    (None: one look, at 1 - `confidence`); where none does, the last look's, with the timed
    runs a side that would decide it, about (`needed`). Each verdict says its `look`."""
    taken = max((max(ks, default=1) for ks in looks_of.values()), default=1)
    levels = (1 - confidence,) if plan is None else plan.levels(taken)
    taken = len(levels)
    out: dict[str, dict[str, object]] = {}
    for k, level in enumerate(levels, start=1):
        seen = {
            m: [r for r, at in zip(rs, looks_of.get(m, [1] * len(rs)), strict=True) if at <= k]
            for m, rs in runs.items()
        }
        for mode, v in speed(seen, reference, min_effect=min_effect, level=level).items():
            if mode in out:
                continue
            last = k == taken
            if v["verdict"] in (REFERENCE, *rounds.DECIDED) or last:
                out[mode] = {**v, "look": k, "looks": taken}
            if last and v["verdict"] == "unclear" and not v["too_few"]:
                need = runs_needed(v["noise"], math.log(v["ratio"]), level, min_effect)
                out[mode]["needed"] = need
    return out


def undecided(verdicts: Mapping[str, Mapping[str, object]]) -> list[str]:
    """The modes a next timed look times: those `unclear`, which more runs can change."""
    return [m for m, v in verdicts.items() if v["verdict"] == "unclear"]
