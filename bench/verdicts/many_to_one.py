"""Modes judged against one shared reference, in many sessions at once (the sweep's speed rule
and its simulations): a t-test per mode on the mean of log run statistics, one spread pooled
over every mode's runs, Holm's correction over the modes (docs/own-loop.md states the rule and
why). Pure: numpy and scipy, no torch, no pandas."""

from __future__ import annotations

import numpy as np
from scipy import stats

from bench.verdicts.defaults import MIN_EFFECT, MIN_ROUNDS
from bench.verdicts.rounds import holm_rows

PROCEDURE = (
    "a t-test per mode against the reference on the mean of the log run statistics, the spread "
    "pooled over every mode's runs (each mode's runs around its own mean; never below the spread "
    "of the mode's and the reference's runs alone), with Holm's correction across the modes"
)
"""What judges modes that share one reference (`against_reference`), in words, for reports."""


def against_reference(
    logs: np.ndarray,
    *,
    level: float,
    min_effect: float = MIN_EFFECT,
    min_rounds: int = MIN_ROUNDS,
) -> dict[str, np.ndarray]:
    """Modes against one reference, in many sessions at once: `logs[s, k, i]` is the log of run
    i's statistic of mode k in session s (NaN: no such run), mode 0 the reference. For each mode
    1.. of each session (arrays of shape (sessions, modes - 1)):

    - `diff`: the mode's mean log minus the reference's (`ratio`: its exp, the geometric means'
      ratio, the mode's time over the reference's);
    - `sd`: one run's standard deviation of logs: pooled over every mode of the session with two
      runs or more (each around its own mean: the machine's noise, which every mode shares), never
      below the pooled spread of this mode's and the reference's runs alone; `df`: the pooled
      spread's degrees of freedom (the runs less the modes);
    - `p`: the two-sided t-test of `diff` on its standard error sd sqrt(1/n + 1/m), NaN where a
      side has fewer than `min_rounds` runs; `p_holm`: after Holm's correction over the session's
      modes; `lo`, `hi`: the ratio's interval at 1 - `level`;
    - `verdict`: 1 slower, -1 faster (p_holm at most `level` and the ratio beyond 1 +/-
      `min_effect`), 0 same (the interval within 1 +/- `min_effect`), NaN unclear.

    No moderation prior: the modes share the reference's runs, so their spreads are not the
    independent estimates a prior is fitted from; pooling the runs of every mode is the one
    estimate they do share (Dunnett's many-to-one setting)."""
    logs = np.asarray(logs, dtype=float)
    if logs.ndim != 3 or logs.shape[1] < 2:
        raise ValueError(f"logs of shape {logs.shape}: want (sessions, modes >= 2, runs)")
    n = (~np.isnan(logs)).sum(axis=2)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.nanmean(logs, axis=2) if logs.shape[2] else np.full(n.shape, np.nan)
        ss = np.nansum((logs - mean[..., None]) ** 2, axis=2)
        spread_of = n >= 2
        pooled_df = np.where(spread_of, n - 1, 0).sum(axis=1, keepdims=True)
        pooled = np.where(spread_of, ss, 0).sum(axis=1, keepdims=True) / pooled_df
        own_df = n[:, 1:] + n[:, :1] - 2
        own = (ss[:, 1:] + ss[:, :1]) / own_df
        var = np.fmax(pooled, own)
        nm, nr = n[:, 1:], n[:, :1]
        diff = mean[:, 1:] - mean[:, :1]
        se = np.sqrt(var * (1 / nm + 1 / nr))
        df = np.broadcast_to(pooled_df, diff.shape).astype(float)
        ok = (nm >= min_rounds) & (nr >= min_rounds) & (df >= 1) & np.isfinite(se)
        t = np.where(se > 0, np.abs(diff) / se, np.where(diff != 0, np.inf, 0.0))
        p = np.where(ok, 2 * stats.t.sf(t, np.where(ok, df, 1.0)), np.nan)
        half = stats.t.isf(level / 2, np.where(ok, df, 1.0)) * se
    p_holm = holm_rows(p)
    ratio = np.exp(diff)
    lo, hi = np.where(ok, np.exp(diff - half), np.nan), np.where(ok, np.exp(diff + half), np.nan)
    verdict = np.full(diff.shape, np.nan)
    verdict[ok & (1 - min_effect <= lo) & (hi <= 1 + min_effect)] = 0.0
    called = ok & (p_holm <= level)
    verdict[called & (ratio < 1 - min_effect)] = -1.0
    verdict[called & (ratio > 1 + min_effect)] = 1.0
    return {
        "diff": diff, "ratio": ratio, "lo": lo, "hi": hi, "p": p, "p_holm": p_holm,
        "sd": np.where(ok, np.sqrt(var), np.nan), "df": np.where(ok, df, np.nan),
        "n": nm, "n_reference": np.broadcast_to(nr, diff.shape), "too_few": ~ok,
        "verdict": verdict,
    }  # fmt: skip


WORDS = {-1.0: "faster", 0.0: "same", 1.0: "slower"}
"""`against_reference`'s verdict codes in words (NaN: unclear)."""
