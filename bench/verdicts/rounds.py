"""The verdict on two sides' rounds: per case a t-test on the mean of log round statistics, its
spread moderated across a mode's cases (`fit_prior`, Smyth 2004); Holm's correction across the
cases (`family_verdicts`); equal alpha per look (`looks`). docs/comparing.md says why; a shared
reference (the sweep) takes `bench.verdicts.many_to_one`. Numpy and scipy: no torch, no pandas."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special, stats

from bench.verdicts.defaults import CONFIDENCE, MIN_EFFECT, MIN_ROUNDS, PRIOR_ROUNDS

STATISTICS = {"median": 50.0, "p10": 10.0}
"""What one round (one observation) of a case is summed up by: the median of its step times
(the default, what every report shows), or their 10th percentile. Work that shares the machine
only ever adds time to some steps, so the lower tail is what the code costs and moves less from
one process to the next."""


def of_round(samples: Sequence[float], statistic: str = "median") -> float:
    """One round's step times summed up by `statistic` (a key of `STATISTICS`), over its
    training steps: a NaN sample is a step that applied no update (GradScaler skipped it,
    `bench.measure.timing.SKIPPED`) and is left out."""
    if statistic not in STATISTICS:
        raise ValueError(f"statistic {statistic!r}: choose from {', '.join(STATISTICS)}")
    values = np.asarray(samples, dtype=float)
    values = values[~np.isnan(values)]
    if len(values) == 0:
        raise ValueError("no training step in the round")
    return float(np.percentile(values, STATISTICS[statistic]))


PROCEDURE = (
    "a t-test per case on the mean of the log of each round's statistic, its spread moderated "
    f"across the cases of the same mode from {PRIOR_ROUNDS} rounds a side on (empirical Bayes, "
    "Smyth 2004), with Holm's correction across the cases"
)
"""What judges a comparison, in words, for reports."""
ERROR_CONTROLLED = "family-wise error rate: the chance of any false faster or slower call"
"""The error the procedure controls, in words."""
NOISE_K = 0.0
"""No floor by default: a change is called when the test and `min_effect` say so. A floor
proportional to one round's spread (this many times it) would not shrink with rounds, so power
could never grow past it; kept as an option (`noise_k`) for a caller that wants one."""
PRIOR_CASES = 3
"""Cases with a spread a group needs before its variances are fitted a prior (else the family's)."""
VERDICTS_CALLED = ("faster", "slower")
"""The verdicts that claim a difference: the ones a family of cases must earn together."""
DECIDED = ("faster", "slower", "same")
"""The verdicts after which more rounds would not change the answer's kind."""


@dataclass(frozen=True)
class Prior:
    """The moderation prior of a group of cases: variance `s2` of log rounds, worth `df` degrees
    of freedom (0: no prior, each case judged on its own spread)."""

    s2: float = 0.0
    df: float = 0.0


def spread(x: np.ndarray, y: np.ndarray) -> tuple[float, int]:
    """The pooled variance of two sides' log rounds around their own means, and its df."""
    dof = len(x) + len(y) - 2
    if dof < 1:
        return math.nan, 0
    return float(((x - x.mean()) ** 2).sum() + ((y - y.mean()) ** 2).sum()) / dof, dof


def _trigamma_inverse(value: float) -> float:
    """y with trigamma(y) = value, by Newton's method as limma's `trigammaInverse`."""
    if value > 1e7:
        return 1 / math.sqrt(value)
    if value < 1e-6:
        return 1 / value
    y = 0.5 + 1 / value
    for _ in range(50):
        tri = float(special.polygamma(1, y))
        step = tri * (1 - tri / value) / float(special.polygamma(2, y))
        y += step
        if -step / y < 1e-8:
            break
    return y


def fit_prior(variances: Sequence[float], dofs: Sequence[int]) -> Prior:
    """The scaled inverse chi-square prior the cases' variances imply (limma's `fitFDist`, by the
    moments of log variances): its scale `s2` and its degrees of freedom `df`. Cases without a
    positive variance are left out; fewer than `PRIOR_CASES` left give no prior. `df` is never
    more than the cases' own degrees of freedom together: the prior is estimated from them, so it
    cannot know the variance better than pooling them would (limma's infinite df where the
    variances scatter no more than chance would make normal critical values where t applies)."""
    s2 = np.asarray(variances, dtype=float)
    d = np.asarray(dofs, dtype=float)
    keep = np.isfinite(s2) & (s2 > 0) & (d > 0)
    s2, d = s2[keep], d[keep]
    if len(s2) < PRIOR_CASES:
        return Prior()
    e = np.log(s2) - special.digamma(d / 2) + np.log(d / 2)
    excess = float(e.var(ddof=1) - special.polygamma(1, d / 2).mean())
    cap = float(d.sum())
    if excess <= 0:  # no more scatter than chance: one variance, as good as all of them pooled
        return Prior(s2=float((s2 * d).sum() / cap), df=cap)
    d0 = min(cap, 2 * _trigamma_inverse(excess))
    return Prior(s2=float(math.exp(e.mean() + special.digamma(d0 / 2) - math.log(d0 / 2))), df=d0)


def rounds_verdict(
    a: Sequence[float],
    b: Sequence[float],
    *,
    prior: Prior = Prior(),
    min_effect: float = MIN_EFFECT,
    confidence: float = CONFIDENCE,
    noise_k: float = NOISE_K,
    looks: int = 1,
) -> dict[str, object]:
    """One case's verdict from its rounds: `a` and `b` hold one value per round of each side.

    - ratio: B over A, exp of the difference of the mean log rounds (the geometric means' ratio);
    - spread: the pooled variance of the log rounds, moderated towards `prior`, never below the
      case's own; the test and interval are on the difference of the means, its standard error
      sqrt(spread (1/n + 1/m)), so they sharpen as rounds are added; t with its df plus the
      prior's; p: two-sided; interval: ratio's at 1 - (1 - confidence) / `looks`;
    - noise: the standard deviation of one round (the square root of that spread), shown for
      information; it bars a call only where `noise_k` is above 0 (not by default);
    - `faster` / `slower`: p at most the look's alpha (the family's correction then keeps the
      call or not, `family_verdicts`) and the ratio beyond 1 -/+ `min_effect` (or `noise_k`
      times the noise, if larger); `same`: the interval within 1 -/+ `min_effect`; `unclear`:
      anything else, and always with fewer than `MIN_ROUNDS` a side (`too_few`).
    """
    return _judge([(a, b, prior)], min_effect, confidence, noise_k, looks)[0]


def _judge(
    items: Sequence[tuple[Sequence[float], Sequence[float], Prior]],
    min_effect: float,
    confidence: float,
    noise_k: float,
    looks: int,
    min_rounds: int = MIN_ROUNDS,
) -> list[dict[str, object]]:
    """`rounds_verdict` of many cases at once: the t distribution asked once for all of them
    (a grid's comparison, and the power study's thousands)."""
    if isinstance(looks, bool) or not isinstance(looks, int) or looks < 1:
        raise ValueError(f"looks: {looks!r} is not a positive integer")
    alpha = (1 - confidence) / looks
    outs, tested = [], []
    for a, b, prior in items:
        x = np.log(np.asarray(a, dtype=float))
        y = np.log(np.asarray(b, dtype=float))
        n, m = len(x), len(y)
        if n < 1 or m < 1:
            raise ValueError(f"a rounds verdict needs a round on each side, got {n} and {m}")
        diff = float(y.mean() - x.mean())
        out: dict[str, object] = {
            "ratio": math.exp(diff),
            "ratio_lo": math.nan,
            "ratio_hi": math.nan,
            "p_value": math.nan,
            "noise": math.nan,
            "df": math.nan,
            "rounds_a": n,
            "rounds_b": m,
            "too_few": min(n, m) < min_rounds,
            "verdict": "unclear",
        }
        outs.append(out)
        if out["too_few"]:
            continue
        s2, dof = spread(x, y)
        df = dof + prior.df
        # Never below the case's own spread: a noisy case among quiet ones (or one whose rounds
        # land on two speeds) is not made quiet by its neighbours.
        var = max(s2, (dof * s2 + prior.df * prior.s2) / df)
        tested.append((out, diff, var, math.sqrt(var * (1 / n + 1 / m)), df))
    if not tested:
        return outs
    diff, var, se, df = np.array([t[1:] for t in tested], dtype=float).T
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(se > 0, 2 * stats.t.sf(np.abs(diff) / se, df), (diff != 0) * -1.0 + 1.0)
    half = stats.t.ppf(1 - alpha / 2, df) * se
    for (out, *_), d, v, pv, h, f in zip(tested, diff, var, p, half, df, strict=True):
        noise = math.sqrt(v)
        bound = max(min_effect, noise_k * noise)
        lo, hi = math.exp(d - h), math.exp(d + h)
        ratio = float(out["ratio"])
        if pv <= alpha and ratio < 1 - bound:
            word = "faster"
        elif pv <= alpha and ratio > 1 + bound:
            word = "slower"
        elif 1 - min_effect <= lo and hi <= 1 + min_effect:
            word = "same"
        else:
            word = "unclear"
        out.update(
            ratio_lo=lo, ratio_hi=hi, p_value=float(pv), noise=noise, df=float(f), verdict=word
        )
    return outs


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjustment of the p-values of one family of tests, in their order: with
    the m p-values sorted, p(1) <= ... <= p(m), the i-th becomes min(1, max over j <= i of
    (m - j + 1) * p(j)). Calling each test whose adjusted p is at most alpha holds the chance of
    any false call among the m at alpha, however the tests depend on each other (Holm, 1979).
    A NaN (a test not made) stays NaN and does not count in m.

    >>> holm([0.01, 0.04, 0.03, 0.005]).tolist()
    [0.03, 0.06, 0.06, 0.02]
    """
    p = np.asarray(p_values, dtype=float)
    if p.ndim != 1 or ((p < 0) | (p > 1)).any():
        raise ValueError(f"holm wants a list of p-values in [0, 1], got {p_values!r}")
    return holm_rows(p[None, :])[0]


def holm_rows(p: np.ndarray) -> np.ndarray:
    """`holm` on each row of a 2-D array of p-values at once (NaN: no test, not counted)."""
    p = np.asarray(p, dtype=float)
    tested = ~np.isnan(p)
    m = tested.sum(axis=1, keepdims=True)
    q = np.where(tested, p, np.inf)
    order = np.argsort(q, axis=1, kind="stable")
    ranked = np.take_along_axis(q, order, axis=1)
    with np.errstate(invalid="ignore"):  # inf times 0 past the tested ones: masked below
        steps = np.minimum(1.0, np.maximum.accumulate((m - np.arange(p.shape[1])) * ranked, 1))
    out = np.empty_like(p)
    np.put_along_axis(out, order, steps, axis=1)
    return np.where(tested, out, np.nan)


def benjamini_hochberg(p_values: Sequence[float]) -> np.ndarray:
    """Benjamini-Hochberg's step-up adjustment (false-discovery rate), NaN as in `holm`: the
    i-th smallest of m becomes min over j >= i of m * p(j) / j. Kept for the power study's
    comparison with Holm (`bench.verdicts.power`); no verdict uses it."""
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, math.nan)
    order = np.flatnonzero(~np.isnan(p))
    order = order[np.argsort(p[order], kind="stable")]
    scaled = len(order) * p[order] / np.arange(1, len(order) + 1)
    out[order] = np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])
    return out


CORRECTIONS = {"holm": holm, "bh": benjamini_hochberg}
"""Corrections across a family: Holm's (the verdicts') and Benjamini-Hochberg's (the study's)."""


def family_verdicts(
    cases: Sequence[dict[str, object]],
    *,
    confidence: float = CONFIDENCE,
    looks: int = 1,
    correction: str = "holm",
) -> list[dict[str, object]]:
    """The verdicts of one comparison's cases, judged as one family: each case (a dict with
    `rounds_verdict`'s `p_value` and `verdict`, among any other keys) gains `p_holm`, its
    p-value after Holm's correction over the cases that have one (after Benjamini-Hochberg's
    with `correction="bh"`, for the power study: the column keeps its name), and keeps `faster` or
    `slower` only where `p_holm` is at most the look's alpha, (1 - confidence) / `looks`,
    becoming `unclear` elsewhere. `same` and `unclear` stand; a case without a p-value (too few
    rounds, or `missing`) is not part of the family. Returns new dicts, `p_holm` right after
    `p_value`."""
    alpha = (1 - confidence) / looks
    adjusted = CORRECTIONS[correction]([float(c.get("p_value", math.nan)) for c in cases])
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


def judge_family(
    rounds: Sequence[tuple[Hashable, Sequence[float], Sequence[float]]],
    *,
    min_effect: float = MIN_EFFECT,
    confidence: float = CONFIDENCE,
    looks: int = 1,
    correction: str = "holm",
    min_rounds: int = MIN_ROUNDS,
) -> list[dict[str, object]]:
    """The one judge of a comparison (`compare`, `ab`'s stopping rule, `history`): `rounds` holds,
    per case, its group (its mode; cases of one group share a moderation prior) and each side's
    round values. Each group of at least `PRIOR_CASES` cases with a spread is fitted its own
    prior; the cases of smaller groups share the prior of the whole family; a case with fewer
    than `PRIOR_ROUNDS` a side is judged on its own spread. `min_rounds`: below it a case is
    `too_few` (the power study sets it aside to show what fewer rounds do). Returns
    `rounds_verdict`'s dict per case, after Holm's correction (`family_verdicts`)."""
    logs = [
        (g, np.log(np.asarray(a, dtype=float)), np.log(np.asarray(b, dtype=float)))
        for g, a, b in rounds
    ]
    moderated = max(min_rounds, PRIOR_ROUNDS)
    spreads = [
        spread(x, y) if min(len(x), len(y)) >= moderated else (math.nan, 0) for _, x, y in logs
    ]
    whole = fit_prior([s for s, _ in spreads], [d for _, d in spreads])
    priors: dict[Hashable, Prior] = {}
    for group in {g for g, _, _ in logs}:
        mine = [s for (g, _, _), s in zip(logs, spreads, strict=True) if g == group]
        fitted = fit_prior([s for s, _ in mine], [d for _, d in mine])
        priors[group] = fitted if fitted.df > 0 else whole
    alone = _judge(
        [(a, b, priors[g] if min(len(a), len(b)) >= moderated else Prior()) for g, a, b in rounds],
        min_effect,
        confidence,
        NOISE_K,
        looks,
        min_rounds,
    )
    return family_verdicts(alone, confidence=confidence, looks=looks, correction=correction)


def decided(verdicts: Sequence[str]) -> bool:
    """Whether more rounds would add nothing: every case faster, slower or same."""
    return all(v in DECIDED for v in verdicts)


def paired_ratio(a: Sequence[float], b: Sequence[float], confidence: float = CONFIDENCE) -> dict:
    """B over A where round i of each side ran back to back (interleaved windows of one
    process): the geometric mean of the per-round ratios and its t interval. Pairing takes out
    the drift the rounds share, which `rounds_verdict` (independent rounds) must count as noise."""
    if len(a) != len(b) or len(a) < 2:
        raise ValueError(f"paired rounds: {len(a)} and {len(b)}, need two or more of each, equal")
    logs = np.log(np.asarray(b, float) / np.asarray(a, float))
    half = (
        stats.t.ppf(0.5 + confidence / 2, len(logs) - 1) * logs.std(ddof=1) / math.sqrt(len(logs))
    )
    mean = float(logs.mean())
    return {
        "ratio": math.exp(mean),
        "ratio_lo": math.exp(mean - half),
        "ratio_hi": math.exp(mean + half),
        "rounds": len(logs),
        "confidence": confidence,
    }


def judge_rounds(
    cases: Sequence[tuple[Hashable, Sequence[np.ndarray], Sequence[np.ndarray]]],
    *,
    min_effect: float = MIN_EFFECT,
    confidence: float = CONFIDENCE,
    statistic: str = "median",
    looks: int = 1,
) -> list[dict[str, object]]:
    """The one assembly of rounds for `judge_family`, which `compare`, `history`, `ab`'s
    stopping rule and the sweep's speed verdict all call: per case (its group, the mode its
    spread is moderated with, and each side's rounds, arrays of step times in ms), each round
    summed up by `statistic` (`of_round`), judged as one family; with the medians of all its
    training steps beside the verdict (`median_ms_a`, `median_ms_b`)."""
    judged = judge_family(
        [
            (group, [of_round(r, statistic) for r in a], [of_round(r, statistic) for r in b])
            for group, a, b in cases
        ],
        min_effect=min_effect,
        confidence=confidence,
        looks=looks,
    )
    return [
        {
            "median_ms_a": float(np.nanmedian(np.concatenate(a))),
            "median_ms_b": float(np.nanmedian(np.concatenate(b))),
            **verdict,
        }
        for (_, a, b), verdict in zip(cases, judged, strict=True)
    ]
