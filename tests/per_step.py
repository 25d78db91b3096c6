"""The per-step test history and the site once judged changes with, kept here only so that tests
can show what it gets wrong: a bootstrap interval of the ratio of medians over the raw per-step
samples of two runs, and Mann-Whitney's U over those steps. Steps of one run follow each other
within milliseconds, so it takes the run-to-run noise (clocks, load, a fresh process's layout)
for a change. The harness judges with rounds (`bench.verdicts.rounds.rounds_verdict`)."""

import inspect

import numpy as np
from scipy import stats

# scipy 1.15 renamed bootstrap's `random_state` to `rng`.
_RNG_ARG = "rng" if "rng" in inspect.signature(stats.bootstrap).parameters else "random_state"


def per_step_verdict(a, b, *, min_effect=0.02, confidence=0.95, seed=0) -> dict[str, object]:
    """Ratio of medians (B over A), its bootstrap interval, the U test's p-value, a verdict."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    ratio = float(np.median(b) / np.median(a))

    def ratio_of_medians(x, y, axis=-1):
        return np.median(y, axis=axis) / np.median(x, axis=axis)

    ci = stats.bootstrap(
        (a, b),
        ratio_of_medians,
        confidence_level=confidence,
        n_resamples=2000,
        method="percentile",
        vectorized=True,
        **{_RNG_ARG: np.random.default_rng(seed)},
    ).confidence_interval
    lo, hi = float(ci.low), float(ci.high)
    p = float(stats.mannwhitneyu(a, b, alternative="two-sided").pvalue)
    differs = p < 1 - confidence
    if differs and hi < 1 and ratio < 1 - min_effect:
        word = "faster"
    elif differs and lo > 1 and ratio > 1 + min_effect:
        word = "slower"
    elif 1 - min_effect <= lo and hi <= 1 + min_effect:
        word = "same"
    else:
        word = "unclear"
    return {"ratio": ratio, "ratio_lo": lo, "ratio_hi": hi, "p_value": p, "verdict": word}
