"""When to stop timing a case: after how many windows its samples are narrow enough (`narrow`,
`time cap`, `window cap`, `fixed`), as torch.utils.benchmark's `adaptive_autorange` with windows
for blocks. Pure: a test drives it with made-up millisecond samples."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from bench.cases.grid import DEFAULT_MIN_REPEATS
from bench.measure.stats import NOISY_IQR_OVER_MEDIAN, applied
from bench.verdicts.defaults import MIN_EFFECT

MAX_SPREAD = MIN_EFFECT / 2
"""Windows whose medians lie within this share of their median agree: half of the smallest
effect `compare` reports."""
MAX_IQR = NOISY_IQR_OVER_MEDIAN
"""Steps whose IQR is within this share of their median are not flagged `noisy`."""
MAX_TIMED_S = 4.0
"""Seconds of timed steps after which a case stops once it has `min_windows` windows."""

SETTLE_QUIET = 10
"""A scaled mode's warm-up (`bench.measure.timing.settle`) stops once this many steps in a row
applied their update: GradScaler's scale has stopped backing off."""
SETTLE_CAP = 200
"""...or after this many steps, settled or not: a scale that still backs off by then is the
mode's (an overflow every few steps), and the timed windows count its skips."""

NARROW, TIME_CAP, WINDOW_CAP, FIXED = "narrow", "time cap", "window cap", "fixed"


def _positive_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


@dataclass(frozen=True, kw_only=True)
class StopRule:
    """When a case's timing stops (docs/methodology.md says why each bound)."""

    min_windows: int = DEFAULT_MIN_REPEATS
    """The floor: `--min-repeats`, by default the run's (one constant, `bench.cases.grid`)."""
    max_windows: int
    """The cap: `--repeats`."""
    max_spread: float = MAX_SPREAD
    max_iqr: float = MAX_IQR
    max_timed_s: float = MAX_TIMED_S

    def __post_init__(self) -> None:
        _positive_int("min_windows", self.min_windows)
        _positive_int("max_windows", self.max_windows)
        if self.min_windows > self.max_windows:
            raise ValueError(
                f"min_windows {self.min_windows} is above max_windows {self.max_windows}"
            )
        for name in ("max_spread", "max_iqr", "max_timed_s"):
            value = getattr(self, name)
            if not value > 0:
                raise ValueError(f"{name} must be positive, got {value!r}")

    @classmethod
    def between(cls, least: int, most: int) -> StopRule:
        """`least` to `most` windows; `least` 0 (a folder or case without a minimum) or at or
        above `most`: exactly `most`."""
        return cls(min_windows=most if least < 1 else min(least, most), max_windows=most)

    def stop(self, windows: Sequence[Sequence[float]]) -> str | None:
        """Why to stop after `windows` (each a window's step times, ms), or None to time another."""
        n = len(windows)
        if n < self.min_windows:
            return None
        if self.min_windows == self.max_windows:
            return FIXED
        if self.narrow(windows):
            return NARROW
        if n >= self.max_windows:
            return WINDOW_CAP
        if sum(float(np.nansum(w)) for w in windows) / 1e3 >= self.max_timed_s:
            return TIME_CAP
        return None

    def narrow(self, windows: Sequence[Sequence[float]]) -> bool:
        """The windows' medians agree within `max_spread` and the steps are not noisy."""
        # Over the training steps alone (`bench.measure.stats.applied`): a window GradScaler
        # skipped whole has no median, and is never narrow.
        kept = [applied(w) for w in windows]
        if any(len(w) == 0 for w in kept):
            return False
        medians = np.array([np.median(w) for w in kept], dtype=float)
        steps = np.concatenate(kept)
        center = float(np.median(steps))
        if not center > 0:
            return False
        q1, q3 = np.percentile(steps, [25, 75])
        spread = (medians.max() - medians.min()) / float(np.median(medians))
        return bool(spread <= self.max_spread and (q3 - q1) / center <= self.max_iqr)
