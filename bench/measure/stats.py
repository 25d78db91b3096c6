"""Statistics of raw timing samples, computed after measurement.

Medians and interquartile ranges rather than means and standard deviations: GPU step times have a
long right tail (clock ramps, other processes) that should neither move the centre nor hide.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np

from bench.verdicts.defaults import CONFIDENCE, MIN_EFFECT  # the verdicts' defaults, defined once

NOISY_IQR_OVER_MEDIAN = 0.05
"""A case whose total-step IQR exceeds 5% of its median is flagged `noisy`."""


def summarize(samples: Sequence[float]) -> dict[str, float]:
    """Median, IQR (p75 - p25), p10 and p90 of one list of samples."""
    if len(samples) == 0:
        raise ValueError("no samples to summarize")
    p10, p25, p50, p75, p90 = np.percentile(np.asarray(samples, dtype=float), [10, 25, 50, 75, 90])
    return {"median": float(p50), "iqr": float(p75 - p25), "p10": float(p10), "p90": float(p90)}


def is_noisy(samples: Sequence[float], threshold: float = NOISY_IQR_OVER_MEDIAN) -> bool:
    s = summarize(samples)
    return s["iqr"] > threshold * s["median"]


def phase_columns(samples: dict[str, list[float]]) -> dict[str, float]:
    """Flat row columns per phase: `<phase>_ms` (the median), `_ms_iqr`, `_ms_p10`, `_ms_p90`."""
    row: dict[str, float] = {}
    for phase, values in samples.items():
        s = summarize(values)
        row[f"{phase}_ms"] = s["median"]
        row[f"{phase}_ms_iqr"] = s["iqr"]
        row[f"{phase}_ms_p10"] = s["p10"]
        row[f"{phase}_ms_p90"] = s["p90"]
    return row


STATISTICS = {"median": 50.0, "p10": 10.0}
"""What one round (one observation) of a case is summed up by, for `bench compare`: the median of
its step times (the default, what every report shows), or their 10th percentile. Work that shares
the machine only ever adds time to some steps, so the lower tail is what the code costs and moves
less from one process to the next."""


def of_round(samples: Sequence[float], statistic: str = "median") -> float:
    """One round's step times summed up by `statistic` (a key of `STATISTICS`)."""
    if statistic not in STATISTICS:
        raise ValueError(f"statistic {statistic!r}: choose from {', '.join(STATISTICS)}")
    return float(np.percentile(np.asarray(samples, dtype=float), STATISTICS[statistic]))


NOISE_K = 2.0
"""The noise floor of a verdict, in units of the pooled spread (standard deviation of the log of
each round's statistic) between the rounds of one side: a change smaller than twice what
separates two rounds of the same code is not told apart from no change."""

EXACT_PAIRS = 900
"""Up to this many pairs of rounds (30 a side) the interval comes from U's exact distribution;
beyond, from its normal approximation (a pytest-benchmark save may hold hundreds of rounds)."""


@functools.lru_cache(maxsize=64)
def rank_sum_counts(n: int, m: int) -> np.ndarray:
    """counts[u]: how many of the C(n+m, n) orderings of n values of A and m of B give
    Mann-Whitney's U = u (the pairs with A's value above B's): its exact null distribution,
    without ties. The largest value is A's (it tops all m of B's) or B's (it tops none), so
    f(i, j)[u] = f(i-1, j)[u-j] + f(i, j-1)[u]. Kept per (n, m), read-only: a comparison asks
    for the same few over and over."""
    f = [np.ones(1, dtype=float) for _ in range(m + 1)]  # i = 0: U = 0 whatever j
    for i in range(1, n + 1):
        row = [np.ones(1, dtype=float)]  # j = 0
        for j in range(1, m + 1):
            counts = np.zeros(i * j + 1)
            counts[j : j + len(f[j])] += f[j]  # A's value on top: from (i - 1, j), U + j
            counts[: len(row[j - 1])] += row[j - 1]  # B's value on top: from (i, j - 1)
            row.append(counts)
        f = row
    f[m].flags.writeable = False
    return f[m]


def smallest_p(n: int, m: int) -> float:
    """The smallest two-sided p-value Mann-Whitney can give with n and m observations: both
    samples wholly apart. Below 1 - confidence, no test at that confidence can tell them apart."""
    return min(1.0, 2 / math.comb(n + m, n))


def rounds_verdict(
    a: Sequence[float],
    b: Sequence[float],
    *,
    min_effect: float = MIN_EFFECT,
    confidence: float = CONFIDENCE,
    noise_k: float = NOISE_K,
) -> dict[str, object]:
    """The verdict on a case from its rounds: `a` and `b` hold one value per round of each side
    (a round's median step time, say), each round one observation.

    - ratio: B over A, the Hodges-Lehmann estimate (the median of every round of B over every
      round of A, in logs), robust to one odd round;
    - interval: its distribution-free confidence interval, from Mann-Whitney's exact null
      distribution (the order statistics of those pairwise log ratios); p: Mann-Whitney's
      two-sided p-value (scipy);
    - noise: `noise_k` times the spread between the rounds of one side (the standard deviation
      of their logs, pooled over both sides): how far apart rounds of the same code are;
    - `faster` / `slower`: the interval excludes 1 and the ratio is beyond 1 -/+ the larger of
      `min_effect` and the noise (a comparison of several cases keeps the call only where it
      survives Holm's correction across them, `family_verdicts`); `same`: the interval lies
      within 1 -/+ `min_effect`;
      `unclear`: anything else, and always where the rounds are too few for any test at
      `confidence` to tell (`too_few`: Mann-Whitney's smallest p, `smallest_p`, is above
      1 - confidence; 3 rounds a side give 0.1, 4 give 0.029, 5 give 0.008).
    """
    from scipy import stats  # here: the timing loop imports this module, not scipy

    x = np.log(np.asarray(a, dtype=float))
    y = np.log(np.asarray(b, dtype=float))
    n, m = len(x), len(y)
    if n < 1 or m < 1:
        raise ValueError(f"a rounds verdict needs a round on each side, got {n} and {m}")
    diffs = np.sort(np.subtract.outer(y, x).ravel())
    ratio = float(np.exp(np.median(diffs)))
    dof = n + m - 2
    squares = ((x - x.mean()) ** 2).sum() + ((y - y.mean()) ** 2).sum()
    noise = noise_k * float(np.sqrt(squares / dof)) if dof > 0 else math.nan
    out: dict[str, object] = {
        "ratio": ratio,
        "ratio_lo": math.nan,
        "ratio_hi": math.nan,
        "p_value": math.nan,
        "noise": noise,
        "rounds_a": n,
        "rounds_b": m,
        "too_few": smallest_p(n, m) > 1 - confidence,
        "verdict": "unclear",
    }
    if out["too_few"]:
        return out
    # k: how many of the smallest U values together have probability at most (1 - confidence)
    # / 2; the interval runs from the k-th smallest pairwise log ratio to the k-th largest.
    if n * m <= EXACT_PAIRS:
        counts = rank_sum_counts(n, m)
        k = int((np.cumsum(counts) / counts.sum() <= (1 - confidence) / 2).sum())
    else:  # U's normal approximation, with the continuity correction
        sd = math.sqrt(n * m * (n + m + 1) / 12)
        z = float(stats.norm.ppf((1 + confidence) / 2))
        k = max(1, math.floor(n * m / 2 - z * sd - 0.5) + 1)
    lo, hi = float(np.exp(diffs[k - 1])), float(np.exp(diffs[len(diffs) - k]))
    p = float(stats.mannwhitneyu(y, x, alternative="two-sided").pvalue)
    bound = max(min_effect, noise)
    if hi < 1 and ratio < 1 - bound:
        word = "faster"
    elif lo > 1 and ratio > 1 + bound:
        word = "slower"
    elif 1 - min_effect <= lo and hi <= 1 + min_effect:
        word = "same"
    else:
        word = "unclear"
    out.update(ratio_lo=lo, ratio_hi=hi, p_value=p, verdict=word)
    return out


VERDICTS_CALLED = ("faster", "slower")
"""The verdicts that claim a difference: the ones a family of cases must earn together."""


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjustment of the p-values of one family of tests, in their order: with
    the m p-values sorted, p(1) <= ... <= p(m), the i-th becomes min(1, max over j <= i of
    (m - j + 1) * p(j)). Calling each test whose adjusted p is at most alpha holds the chance of
    any false call among the m at alpha, however the tests depend on each other (Holm, 1979):
    the smallest p faces alpha / m, the next alpha / (m - 1), and so on, and the first that
    fails stops the steps. A NaN (a test not made) stays NaN and does not count in m.

    >>> holm([0.01, 0.04, 0.03, 0.005]).tolist()
    [0.03, 0.06, 0.06, 0.02]
    """
    p = np.asarray(p_values, dtype=float)
    if p.ndim != 1 or ((p < 0) | (p > 1)).any():
        raise ValueError(f"holm wants a list of p-values in [0, 1], got {p_values!r}")
    out = np.full(p.shape, math.nan)
    order = np.flatnonzero(~np.isnan(p))
    order = order[np.argsort(p[order], kind="stable")]
    steps = (len(order) - np.arange(len(order))) * p[order]
    out[order] = np.minimum(1.0, np.maximum.accumulate(steps))
    return out


def family_verdicts(
    cases: Sequence[dict[str, object]], *, confidence: float = CONFIDENCE
) -> list[dict[str, object]]:
    """The verdicts of one comparison's cases, judged as one family: each case (a dict with
    `rounds_verdict`'s `p_value` and `verdict`, among any other keys) gains `p_holm`, its
    p-value after Holm's correction over the cases that have one (`holm`), and keeps `faster`
    or `slower` only where `p_holm` is at most 1 - confidence, becoming `unclear` elsewhere.

    Case by case, each of N cases of the same code has up to that chance of a false call; the
    correction holds the chance of any false `slower` (or `faster`) among all N at it. `same`
    (the interval within the smallest effect) and `unclear` stand; a case without a p-value
    (too few rounds, or `missing` without a `p_value` key) is not part of the family. Returns
    new dicts, `p_holm` right after `p_value`."""
    alpha = 1 - confidence
    adjusted = holm([float(c.get("p_value", math.nan)) for c in cases])
    out = []
    for case, p_holm in zip(cases, adjusted, strict=True):
        row: dict[str, object] = {}
        for key, value in case.items():
            row[key] = value
            if key == "p_value":
                row["p_holm"] = float(p_holm)
        if case.get("verdict") in VERDICTS_CALLED and not p_holm <= alpha:
            row["verdict"] = "unclear"
        out.append(row)
    return out


def rounds_needed(cases: int, confidence: float = CONFIDENCE) -> int:
    """The fewest rounds a side with which a comparison of `cases` cases can call any of them
    faster or slower: Holm's correction asks the smallest p-value to be at most
    (1 - confidence) / cases, and with n rounds a side Mann-Whitney's smallest is
    `smallest_p(n, n)`. At 95%: 4 for one case, 5 for up to 6 cases, 6 for up to 23, 7 for up
    to 85."""
    if isinstance(cases, bool) or not isinstance(cases, int) or cases < 1:
        raise ValueError(f"cases: {cases!r} is not a positive integer")
    n = 1
    while smallest_p(n, n) * cases > 1 - confidence:
        n += 1
    return n
