"""The training rule's equivalence test: two one-sided tests at `ALPHA` each, by Welch's t on two
independent sides (`welch`) or a paired t on per-seed differences (`paired_t`), chosen by the
study's declared pairing (`interval`); and the fewest seeds per mode for a `POWER` chance to call
a mode drawn from fp32's own distribution within the margin (`seeds_needed`). Numpy, scipy."""

from __future__ import annotations

import functools
import math

import numpy as np
import pandas as pd
from scipy import stats

MIN_SEEDS = 3
"""Seeds a side needs before the equivalence test decides anything."""
CONFIDENCE = 0.90
"""Two one-sided tests at 5% each: a 90% interval of the difference."""
ALPHA = (1 - CONFIDENCE) / 2
"""Each one-sided test's level: a `CONFIDENCE` interval is two of them."""
POWER = 0.80
"""The chance, at the seeds the rule needs, that a mode like fp32 is called so."""
MAX_SEEDS = 100
SIMULATED = 4000
"""Studies drawn (seeded) to find the chance that the test calls a mode like fp32 so."""


def welch(
    x: np.ndarray, ref: np.ndarray, level: float = ALPHA, *, conservative: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean(x) − mean(ref), and its interval by Welch's t at one-sided `level` a side, the
    `CONFIDENCE` interval by default), over the last axis: one study per row. A sequential
    study's looks pass their own `level` and `conservative`: min(n, k) − 1 degrees of freedom
    (Hsu's), never liberal whatever the two spreads, where Welch–Satterthwaite's are
    (`bench.verdicts.sequential` says by how much)."""
    x, ref = np.asarray(x, float), np.asarray(ref, float)
    n, k = x.shape[-1], ref.shape[-1]
    gap = x.mean(-1) - ref.mean(-1)
    vx, vr = x.var(-1, ddof=1) / n, ref.var(-1, ddof=1) / k
    se = np.sqrt(vx + vr)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = (vx + vr) ** 2 / (vx**2 / (n - 1) + vr**2 / (k - 1))
        if conservative:
            df = np.full_like(gap, min(n, k) - 1.0)
        half = np.where(se > 0, stats.t.ppf(1 - level, df) * se, 0.0)
    return gap, gap - half, gap + half


def paired_t(d: np.ndarray, level: float = ALPHA) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean(d), and its interval by the t of n − 1 degrees of freedom at one-sided `level` a
    side), over the last axis: `d` holds each seed's mode − fp32. Exact for normal differences
    whatever the two sides' spreads and their correlation, so a sequential look needs no
    conservative degrees of freedom."""
    d = np.asarray(d, float)
    n = d.shape[-1]
    gap = d.mean(-1)
    se = d.std(-1, ddof=1) / math.sqrt(n)
    with np.errstate(invalid="ignore"):
        half = np.where(se > 0, stats.t.ppf(1 - level, n - 1) * se, 0.0)
    return gap, gap - half, gap + half


def interval(
    x: np.ndarray,
    ref: np.ndarray,
    level: float = ALPHA,
    *,
    paired: bool = False,
    conservative: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The equivalence test's (gap, low, high) of mode − fp32 over the last axis, by the study's
    declared test: `paired`, x and ref hold the same seeds in the same order (`paired_t` on
    x − ref); else two independent sides (`welch`, `conservative` as it says)."""
    if paired:
        x, ref = np.asarray(x, float), np.asarray(ref, float)
        if x.shape != ref.shape:
            raise ValueError(f"paired sides of shapes {x.shape} and {ref.shape} do not pair")
        return paired_t(x - ref, level)
    return welch(x, ref, level, conservative=conservative)


def within_rate(
    sd: float,
    m: float,
    n: int,
    shift: float = 0.0,
    seed: int = 0,
    sd_ref: float | None = None,
    *,
    paired: bool = False,
) -> float:
    """The share of `SIMULATED` studies of `n` seeds a side, the mode's seeds normal with SD
    `sd` and fp32's with SD `sd_ref` (`sd` where None), the mode's mean `shift` above
    fp32's, whose interval lands inside ±m. `paired`: `sd` is the SD of the per-seed
    differences, judged by `paired_t` (`sd_ref` unused)."""
    rng = np.random.default_rng(seed)
    if paired:
        _, low, high = paired_t(rng.normal(shift, sd, (SIMULATED, n)))
        return float(np.mean((low > -m) & (high < m)))
    ref = rng.normal(0.0, sd if sd_ref is None else sd_ref, (SIMULATED, n))
    x = rng.normal(shift, sd, (SIMULATED, n))
    _, low, high = welch(x, ref)
    return float(np.mean((low > -m) & (high < m)))


def sd_upper(ref: pd.Series) -> float:
    """A side's seed SD at its one-sided 90% upper bound (chi-square): 3 seeds bound it
    loosely."""
    k = len(ref)
    return float(ref.std(ddof=1)) * math.sqrt((k - 1) / stats.chi2.ppf(1 - CONFIDENCE, k - 1))


@functools.lru_cache(maxsize=256)
def seeds_needed(sd: float, m: float, sd_ref: float | None = None, *, paired: bool = False) -> int:
    """The fewest seeds per mode (at least `MIN_SEEDS`) for a `POWER` chance that a mode
    whose seeds scatter with SD `sd` (fp32's with `sd_ref`, `sd` where None), its mean fp32's,
    lands within ±m; `MAX_SEEDS` + 1 where even that many are not enough. `paired`: `sd` is
    the SD of the per-seed differences, and the test `paired_t`."""
    ref_sd = 0.0 if paired else sd if sd_ref is None else sd_ref
    if sd == 0 and ref_sd == 0:
        return MIN_SEEDS
    for n in range(MIN_SEEDS, MAX_SEEDS + 1):
        # The normal approximation (the SD known) overstates the chance: where even it falls
        # short, the simulation would too.
        se = math.sqrt((sd**2 + ref_sd**2) / n)
        if 2 * stats.norm.cdf(m / se - stats.norm.ppf(1 - ALPHA)) - 1 < POWER:
            continue
        if within_rate(sd, m, n, sd_ref=ref_sd, paired=paired) >= POWER:
            return n
    return MAX_SEEDS + 1


def mode_seeds_needed(x: pd.Series, ref: pd.Series, m: float, *, paired: bool = False) -> int:
    """The seeds per side the rule needs for this mode: its own spread and fp32's, each at
    its 90% upper bound (modes scatter 2–4× as much as fp32 does, so fp32's spread alone
    promises power they do not get); `paired` (x and ref the same seeds in the same order),
    the spread of their per-seed differences at its 90% upper bound."""
    if len(x) < 2 or len(ref) < 2:
        return MIN_SEEDS
    if paired:
        return seeds_needed(sd_upper(x - ref), m, paired=True)
    return seeds_needed(sd_upper(x), m, sd_upper(ref))
