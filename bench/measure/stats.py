"""Statistics of raw timing samples, computed after measurement: medians and IQRs (step times
have a long right tail), over the training steps only (a NaN sample is a skipped step)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

NOISY_IQR_OVER_MEDIAN = 0.05
"""A case whose total-step IQR exceeds 5% of its median is flagged `noisy`."""


def applied(samples: Sequence[float | None]) -> np.ndarray:
    """The samples of the steps that applied their update: NaN (null in a folder) left out."""
    values = np.asarray(samples, dtype=float)
    return values[~np.isnan(values)]


def summarize(samples: Sequence[float]) -> dict[str, float]:
    """Median, IQR (p75 - p25), p10 and p90 of one list of samples (its training steps)."""
    values = applied(samples)
    if len(values) == 0:
        raise ValueError("no samples to summarize")
    p10, p25, p50, p75, p90 = np.percentile(values, [10, 25, 50, 75, 90])
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
