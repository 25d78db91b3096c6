"""The group-sequential equivalence rule: the training judge over looks at growing seed counts
up to `max_seeds`, each look at its nominal level from an alpha-spending function (Pocock by
default, or O'Brien-Fleming), so the error rate holds over all looks (docs/quality.md)."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import optimize, stats

from bench.verdicts import equivalence, training

SPENDING: dict[str, Callable[[float, float], float]] = {
    "pocock": lambda alpha, t: alpha * math.log(1 + (math.e - 1) * t),
    "obrien-fleming": lambda alpha, t: (
        2 - 2 * stats.norm.cdf(stats.norm.ppf(1 - alpha / 2) / math.sqrt(t))
    ),
}
"""Lan-DeMets alpha-spending functions: the one-sided alpha spent by information fraction t."""
DEFAULT_SPENDING = "pocock"
DEFAULT_MAX_SEEDS = 8
"""The cap of a sequential study given a budget and no cap (`--budget` without `--max-seeds`)."""
GRID = 1201
"""Points of the integration grid of a look's statistic."""
FLOOR = -8.0
"""Where the grid starts, in standard deviations: below it, no mass that matters."""


def spent(t: float, alpha: float = equivalence.ALPHA, spending: str = DEFAULT_SPENDING) -> float:
    """The one-sided alpha spent up to information fraction `t` (0 < t, capped at 1)."""
    if spending not in SPENDING:
        raise ValueError(f"spending {spending!r} is not one of {', '.join(SPENDING)}")
    return SPENDING[spending](alpha, min(t, 1.0))


def _weights(z: np.ndarray) -> np.ndarray:
    """The trapezoid rule's weights on an even grid."""
    w = np.full(len(z), z[1] - z[0])
    w[[0, -1]] /= 2
    return w


def _crossing(b: float, z: np.ndarray, mass: np.ndarray, t0: float, t1: float) -> float:
    """The chance that a statistic at `z` (its mass on the grid) at information `t0` is at `b`
    or above at `t1`."""
    return float(mass @ stats.norm.sf((b * math.sqrt(t1) - z * math.sqrt(t0)) / math.sqrt(t1 - t0)))


@functools.lru_cache(maxsize=512)
def levels(
    fractions: tuple[float, ...], alpha: float = equivalence.ALPHA, spending: str = DEFAULT_SPENDING
) -> tuple[float, ...]:
    """The nominal one-sided level of each look at information `fractions` (increasing, in
    (0, 1]): the first look's is what the spending function allows up to it; each later one's
    boundary c_k makes the chance of crossing it first, having crossed none before, equal to
    the alpha spent between the two looks (a normal statistic, Brownian in the information;
    the density of the looks that went on carried on a grid, as Armitage, McPherson and Rowe's
    recursion does)."""
    if not fractions or any(b <= a for a, b in itertools.pairwise(fractions)):
        raise ValueError(f"looks at fractions {fractions} do not increase")
    if fractions[0] <= 0 or fractions[-1] > 1 + 1e-12:
        raise ValueError(f"looks at fractions {fractions} are not in (0, 1]")
    c = stats.norm.isf(spent(fractions[0], alpha, spending))
    out = [float(stats.norm.sf(c))]
    z = np.linspace(FLOOR, c, GRID)
    density = stats.norm.pdf(z)  # of the first look's statistic, where it went on (below c)
    for t0, t1 in itertools.pairwise(fractions):
        gap = spent(t1, alpha, spending) - spent(t0, alpha, spending)
        mass = density * _weights(z)
        c = optimize.brentq(lambda b: _crossing(b, z, mass, t0, t1) - gap, -10.0, 40.0, xtol=1e-10)  # noqa: B023
        out.append(float(stats.norm.sf(c)))
        root = math.sqrt(t1 - t0)
        below = np.linspace(FLOOR, c, GRID)
        kernel = stats.norm.pdf(
            (below[:, None] * math.sqrt(t1) - z[None, :] * math.sqrt(t0)) / root
        )
        density, z = kernel @ mass * math.sqrt(t1) / root, below
    return tuple(out)


PAIRED_DRAWS = 2**18
"""Seeded null studies that place a paired look's level (`paired_levels`): the spent alpha
comes out within about 0.0005 of the spending function's."""


@functools.lru_cache(maxsize=512)
def paired_levels(
    looks: tuple[int, ...],
    max_seeds: int,
    alpha: float = equivalence.ALPHA,
    spending: str = DEFAULT_SPENDING,
) -> tuple[float, ...]:
    """The nominal one-sided level of each look (`looks`: pairs at each) of the paired t, such
    that the chance of crossing first at look k is the alpha spent between look k − 1 and k.
    `levels` assumes a statistic of known variance; the paired t re-estimates it at every look
    (2 degrees of freedom at a first look of 3), so at those levels it crosses more often than
    alpha over the looks (results/sessions/pairing_evaluation.md). Its null distribution is
    free of the differences' mean and spread (the t of each look is scale-free), so seeded
    draws of standard normal differences place each level once for every study, as `levels`'
    recursion does for the normal statistic."""
    if not looks or any(b <= a for a, b in itertools.pairwise(looks)) or looks[0] < 2:
        raise ValueError(f"looks at {looks} pairs do not increase from 2 or more")
    if looks[-1] > max_seeds:
        raise ValueError(f"looks at {looks} pairs pass the cap of {max_seeds}")
    z = np.random.default_rng(0).standard_normal((PAIRED_DRAWS, looks[-1]))
    total, squares = np.cumsum(z, axis=1), np.cumsum(z**2, axis=1)
    open_ = np.ones(PAIRED_DRAWS, dtype=bool)
    out, before = [], 0.0
    for n in looks:
        mean = total[:, n - 1] / n
        sd = np.sqrt(np.maximum(squares[:, n - 1] - n * mean**2, 0.0) / (n - 1))
        p = stats.t.cdf(mean / (sd / math.sqrt(n)), n - 1)  # the one-sided test's p-value
        now = spent(n / max_seeds, alpha, spending)
        if not out:  # a first look's p-value is uniform: its level is what is spent
            level = now
        else:  # between the last p-value that crosses and the first that does not
            cross = round((now - before) * PAIRED_DRAWS)
            waiting = np.sort(p[open_])
            level = float(waiting[: cross + 1][-2:].mean()) if cross else float(waiting[0]) / 2
        out.append(level)
        open_ &= p >= level
        before = now
    return tuple(out)


@dataclass(frozen=True)
class Design:
    """A sequential study's plan, fixed before its first look: seeds a side at the first look,
    the cap, the seeds each later look adds, the spending function, and the test."""

    first: int
    max_seeds: int
    step: int = 1
    spending: str = DEFAULT_SPENDING
    alpha: float = equivalence.ALPHA
    paired: bool = True
    """The paired t on each seed's mode − fp32 (each mode of a seed starts from fp32's weights
    and batches), at its own levels; False: Welch's t, as designs recorded before the test was
    part of the design were judged (docs/quality.md, "Pairing by seed", says why)."""

    def __post_init__(self) -> None:
        if self.first < equivalence.MIN_SEEDS:
            raise ValueError(
                f"a first look of {self.first} seeds is fewer than {equivalence.MIN_SEEDS}"
            )
        if self.max_seeds < self.first:
            raise ValueError(f"max seeds {self.max_seeds} is below the first look's {self.first}")
        if self.step < 1:
            raise ValueError(f"a look adding {self.step} seeds adds none")
        spent(1.0, self.alpha, self.spending)  # an unknown spending function: ValueError

    def looks(self) -> tuple[int, ...]:
        """Seeds a side at each look the plan allows: the first, then `step` more each, and the
        cap last."""
        out = list(range(self.first, self.max_seeds, self.step))
        return (*out, self.max_seeds) if out[-1:] != [self.max_seeds] else tuple(out)

    def next_look(self, seeds: int) -> int | None:
        """The seeds of the look after one at `seeds`, or None at the cap."""
        later = [n for n in self.looks() if n > seeds]
        return later[0] if later else None

    def levels(self, looks: Sequence[int]) -> tuple[float, ...]:
        """The nominal one-sided level of each look taken (seeds a side), by the information
        those looks actually had: a study that skipped or stopped early is judged at the
        looks it took. A paired design's are its own test's (`paired_levels`)."""
        if self.paired:
            return paired_levels(tuple(looks), self.max_seeds, self.alpha, self.spending)
        return levels(tuple(n / self.max_seeds for n in looks), self.alpha, self.spending)

    def record(self) -> dict[str, object]:
        return {"first": self.first, "max_seeds": self.max_seeds, "step": self.step,
                "spending": self.spending, "alpha": self.alpha,
                "paired": self.paired}  # fmt: skip

    @classmethod
    def from_record(cls, record: dict[str, object]) -> Design:
        """The design a folder recorded; one recorded before the test was part of the design
        was judged by Welch's t, and keeps it."""
        return cls(**{"paired": False, **record})


def planned(first: int, max_seeds: int, recorded: dict | None = None) -> Design | None:
    """A study's plan from its first look and cap, or None for one look (a cap at the first
    look); its test the one its folder `recorded` where it did (a resumed study keeps it; a
    record without one was Welch's), else paired by seed."""
    if max_seeds <= first:
        return None
    design = Design(first, max_seeds)
    if recorded:
        return dataclasses.replace(design, paired=Design.from_record(recorded).paired)
    return design


@dataclass(frozen=True)
class Judged:
    """A mode's verdict in a sequential study: the verdict at the look that decided it (or at
    the last look, not known), that look's seeds a side and its nominal one-sided level."""

    verdict: training.Verdict
    seeds: int
    level: float
    look: int
    """1 for the first look."""

    @property
    def decided(self) -> bool:
        return self.verdict.verdict != training.NOT_KNOWN


def at_look(summary: pd.DataFrame, order: Sequence[int], seeds: int) -> pd.DataFrame:
    """The rows of the first `seeds` seeds of the study's seed `order`: what a look saw."""
    return summary[summary["seed"].isin(list(order)[:seeds])]


def judge(
    summary: pd.DataFrame,
    mode: str,
    design: Design,
    looks: Sequence[int],
    order: Sequence[int],
    *,
    synthetic: bool,
    drop: float = training.LEARNED_DROP,
) -> Judged:
    """`mode`'s verdict over the `looks` taken (seeds a side at each, in the seed `order`):
    the first look that decides it, at that look's level, and the later looks unread (they
    are other modes' looks, not this one's). Where none decides, the last look's verdict,
    not known, with the seeds it would need. `drop`: what the target asks of fp32
    (`training.target`)."""
    if not looks:
        raise ValueError("no look taken")
    lv = design.levels(looks)
    for k, (n, level) in enumerate(zip(looks, lv, strict=True), start=1):
        v = training.trains_like_fp32(
            at_look(summary, order, n),
            mode,
            synthetic=synthetic,
            level=level,
            conservative=True,
            paired=design.paired,
            drop=drop,
        )
        if v.verdict != training.NOT_KNOWN or k == len(looks):
            return Judged(v, n, level, k)
    raise AssertionError("unreachable")


def judge_each(
    summary: pd.DataFrame,
    modes: Sequence[str],
    design: Design,
    looks: Sequence[int],
    order: Sequence[int],
    drop: float = training.LEARNED_DROP,
) -> dict[str, Judged]:
    """Each mode's verdict over the `looks` taken (`judge`, on real data), the reference and
    modes without a finished run left out: what a study and a sweep both look at."""
    present = set(summary["mode"]) if len(summary) else set()
    return {
        m: judge(summary, m, design, looks, order, synthetic=False, drop=drop)
        for m in modes
        if m != training.REFERENCE and m in present
    }


def undecided(judged: dict[str, Judged]) -> list[str]:
    """The modes a next look trains: those not known for a reason more seeds can change
    (an interval across the margin, or too few seeds finished)."""
    return [m for m, j in judged.items() if not j.decided and _more_seeds_help(j.verdict)]


def _more_seeds_help(v: training.Verdict) -> bool:
    # No target (fp32's best not the drop below its value before training) or synthetic data:
    # more seeds do not change it.
    return not math.isnan(v.low) or "finished, fewer than" in v.reason
