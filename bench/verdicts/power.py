"""How often the rounds judge (`bench.verdicts.rounds.judge_family`) calls a known change, and
how often one that is not there, on rounds bootstrapped from real ones (a smoothed bootstrap
of each case's rounds, plus a lognormal drift per simulated process). Pure: numpy."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from bench.verdicts import driver, many_to_one, rounds
from bench.verdicts.defaults import CONFIDENCE, MIN_EFFECT

SHIFTS = (0.0, 0.005, 0.01, 0.03, 0.05, -0.03)
"""The known changes given to the cases in turn: none, two below the smallest effect, and three
that a comparison should call."""
DRIFT = 0.005
"""The standard deviation of a process's drift, in logs: 0.5% a round."""


def bandwidth(values: np.ndarray) -> float:
    """Silverman's rule for the smoothed bootstrap, in logs: 1.06 sd k^(-1/5) of k values."""
    logs = np.log(values)
    return 1.06 * float(logs.std(ddof=1)) * len(logs) ** -0.2 if len(logs) > 1 else 0.0


@dataclass(frozen=True)
class Case:
    """A case's group (its mode), its real round values (ms) and their kernel's bandwidth."""

    group: Hashable
    values: np.ndarray
    width: float

    @classmethod
    def of(cls, group: Hashable, values: np.ndarray) -> Case:
        values = np.asarray(values, dtype=float)
        return cls(group=group, values=values, width=bandwidth(values))


def _side(
    cases: Sequence[Case], rng: np.random.Generator, rounds_a_side: int, drift: float
) -> list:
    # A smoothed bootstrap: a case has a handful of real windows, and resampling so few values
    # as they are would give rounds that tie, which real rounds never do.
    process = np.exp(rng.normal(0.0, drift, rounds_a_side))  # shared by every case of a process
    return [
        c.values[rng.integers(0, len(c.values), rounds_a_side)]
        * np.exp(rng.normal(0.0, c.width, rounds_a_side))
        * process
        for c in cases
    ]


def one_comparison(
    cases: Sequence[Case],
    shifts: Sequence[float],
    rng: np.random.Generator,
    *,
    rounds_a_side: int,
    drift: float = DRIFT,
    min_effect: float = MIN_EFFECT,
    confidence: float = CONFIDENCE,
    looks: int = 1,
    correction: str = "holm",
    min_rounds: int = rounds.MIN_ROUNDS,
) -> list[str]:
    """The verdicts of one simulated comparison, `rounds_a_side` rounds a side, B shifted by
    `shifts`."""
    a = _side(cases, rng, rounds_a_side, drift)
    b = _side(cases, rng, rounds_a_side, drift)
    family = [(c.group, ra, rb * (1 + s)) for c, ra, rb, s in zip(cases, a, b, shifts, strict=True)]
    out = rounds.judge_family(
        family,
        min_effect=min_effect,
        confidence=confidence,
        looks=looks,
        correction=correction,
        min_rounds=min_rounds,
    )
    return [str(v["verdict"]) for v in out]


def sequential(
    cases: Sequence[Case],
    shifts: Sequence[float],
    rng: np.random.Generator,
    *,
    least: int,
    most: int,
    drift: float = DRIFT,
) -> tuple[list[str], int]:
    """`ab`'s stopping rule on simulated rounds: a look after each pair of rounds from `least` a
    side to `most`, each at alpha over the number of looks; the verdicts where it stopped, and
    the rounds a side it took."""
    looks = most - least + 1
    a = _side(cases, rng, most, drift)
    b = _side(cases, rng, most, drift)
    for n in range(least, most + 1):
        family = [
            (c.group, ra[:n], rb[:n] * (1 + s))
            for c, ra, rb, s in zip(cases, a, b, shifts, strict=True)
        ]
        words = [str(v["verdict"]) for v in rounds.judge_family(family, looks=looks)]
        if rounds.decided(words):
            break
    return words, n


def spread(case: Case) -> float:
    """How far a case's real rounds scatter: the standard deviation of their logs."""
    return float(np.log(case.values).std(ddof=1))


def rates(
    verdicts: Sequence[Sequence[str]], shifts: Sequence[float], among: Sequence[bool] | None = None
) -> dict[str, float]:
    """Over simulated comparisons: the share of comparisons with any false call (a case without
    a shift called faster or slower; `any_false`), and per shift, the share of its cases called
    in its direction (`called_+3.0%`, ...); only the cases `among` marks, where given."""
    keep = np.ones(len(shifts), dtype=bool) if among is None else np.asarray(among, dtype=bool)
    shifts = np.asarray(shifts)[keep]
    calls = np.array(verdicts)[:, keep]
    null = shifts == 0
    out = {"any_false": float(np.isin(calls[:, null], rounds.VERDICTS_CALLED).any(axis=1).mean())}
    for s in sorted(set(shifts.tolist())):
        if s == 0:
            continue
        want = "slower" if s > 0 else "faster"
        out[f"called_{s:+.1%}"] = float((calls[:, shifts == s] == want).mean())
    return out


def speed_sessions(
    speedups: Sequence[float],
    sd: float,
    plan: driver.SpeedPlan,
    rng: np.random.Generator,
    *,
    sessions: int,
    min_effect: float = MIN_EFFECT,
) -> dict[str, np.ndarray]:
    """The sweep's speed rule (`driver.SpeedPlan`, `many_to_one.against_reference`) on `sessions`
    simulated sweeps at once: mode 0 the reference, mode k 1 + ... `speedups[k - 1]` times as
    fast; each timed run's log median scatters by `sd` around its mode's. Look after look a mode
    still `unclear` gets one more timed run, and so does the reference while any mode does.
    Returns, per session and mode k (shape (sessions, modes - 1)): `verdict` (codes as
    `against_reference`'s, NaN unclear at the last look) and `runs` (timed runs a side at the
    look that decided it, or at the last)."""
    k = len(speedups)
    logs = rng.normal(0.0, sd, (sessions, k + 1, plan.most))
    logs[:, 1:, :] -= np.log(np.asarray(speedups, dtype=float))[None, :, None]
    levels = plan.levels(plan.looks)
    verdict = np.full((sessions, k), np.nan)
    runs = np.zeros((sessions, k), dtype=int)
    open_ = np.ones((sessions, k), dtype=bool)
    used = np.zeros((sessions, k + 1), dtype=int)
    for look, level in enumerate(levels, start=1):
        n = plan.runs_at(look)
        used[:, 1:] = np.where(open_, n, used[:, 1:])
        used[:, 0] = np.where(open_.any(axis=1), n, used[:, 0])
        masked = np.where(np.arange(plan.most)[None, None, :] < used[:, :, None], logs, np.nan)
        got = many_to_one.against_reference(masked, level=level, min_effect=min_effect,
                                       min_rounds=driver.MIN_RUNS)  # fmt: skip
        now = open_ & ~np.isnan(got["verdict"])
        verdict[now] = got["verdict"][now]
        runs[open_] = n
        open_ &= ~now
    return {"verdict": verdict, "runs": runs}
