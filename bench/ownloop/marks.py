"""A step's marks: a clock mark at every phase boundary the probe sees (a CUDA event, or
`perf_counter` on the CPU), read back lazily once the step's last event completed, and peak
memory per phase from the allocator's host-side counters (neither waits for the device)."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from bench.measure.memory import GIB
from bench.measure.timing import Clock, CudaClock

PHASES = ("fwd", "bwd", "step", "other")
"""The phases a step is split into; `other` is what the probe sees outside the three (loading
the batch, zero_grad, the user's own work)."""


@dataclass
class StepRecord:
    index: int
    timed: bool
    """Whether its times are samples: not a warm-up step, not the step whose FLOPs were
    counted, not one that read memory or took the census."""
    memory: bool
    marks: list[tuple[str | None, object]] = field(default_factory=list)
    """(the phase that starts here, the clock's mark); the last mark starts nothing."""
    peaks: dict[str, float] = field(default_factory=dict)
    stepped: bool = False
    """The optimizer's step ran (GradScaler skips it when it found inf or NaN)."""
    scale: torch.Tensor | None = None
    """GradScaler's scale after the step's update, a device copy read later."""
    light: bool = False
    """Not a step the probe times (`time_every`): no phase marks, no memory read."""

    def mark(self, clock: Clock, phase: str | None) -> None:
        if self.memory:
            self._peak()
        self.marks.append((phase, clock.mark()))

    def _peak(self) -> None:
        if not self.marks:
            torch.cuda.reset_peak_memory_stats()
            return
        phase = self.marks[-1][0] or "other"
        peak = torch.cuda.max_memory_allocated() / GIB
        self.peaks[phase] = max(self.peaks.get(phase, 0.0), peak)
        torch.cuda.reset_peak_memory_stats()

    def ready(self) -> bool:
        """Every mark has a time (on CUDA: the last event completed; no wait)."""
        last = self.marks[-1][1] if self.marks else None
        return not isinstance(last, torch.cuda.Event) or last.query()

    def times(self, clock: Clock) -> dict[str, float]:
        """Milliseconds per phase that occurred, and `total`."""
        out: dict[str, float] = {}
        for (phase, start), (_, end) in zip(self.marks, self.marks[1:], strict=False):
            out[phase or "other"] = out.get(phase or "other", 0.0) + clock.elapsed_ms(start, end)
        out["total"] = clock.elapsed_ms(self.marks[0][1], self.marks[-1][1])
        return out


def is_device_clock(clock: Clock) -> bool:
    return isinstance(clock, CudaClock)
