"""A step's marks: a clock mark at every phase boundary the probe sees (a CUDA event, reused
once read, or `perf_counter` on the CPU), read lazily once the step's last event completed, and
peak memory per phase from the allocator's host-side counters: nothing waits for the device, as
a loop the host bounds pays for every call the probe makes in its step."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from bench.measure.memory import GIB
from bench.measure.timing import Clock, CudaClock, HostClock

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
    """GradScaler's scale after the step's update, a host copy read later."""
    copied: object = None
    """On a GPU, the event after the scale's copy: the copy is enqueued after the step's last
    timed mark (outside the timed step), so that mark's completion does not say it landed."""
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
        """Every mark has a time and the scale's copy landed (on CUDA: the last event
        completed; no wait)."""
        last = self.copied if self.copied is not None else self.marks[-1][1] if self.marks else None
        return not isinstance(last, torch.cuda.Event) or last.query()

    def events(self) -> list[object]:
        """Every clock mark the record holds (to hand back to the clock once read)."""
        out = [m for _, m in self.marks]
        return out if self.copied is None else [*out, self.copied]

    def times(self, clock: Clock) -> dict[str, float]:
        """Milliseconds per phase that occurred, and `total`."""
        out: dict[str, float] = {}
        for (phase, start), (_, end) in zip(self.marks, self.marks[1:], strict=False):
            out[phase or "other"] = out.get(phase or "other", 0.0) + clock.elapsed_ms(start, end)
        out["total"] = clock.elapsed_ms(self.marks[0][1], self.marks[-1][1])
        return out


class EventClock(CudaClock):
    """`CudaClock` whose events are reused once read (`release`): the probe marks about six a
    timed step for the whole run, and creating each is host time in the user's step."""

    def __init__(self) -> None:
        self._free: list[torch.cuda.Event] = []

    def mark(self) -> torch.cuda.Event:
        event = self._free.pop() if self._free else torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def release(self, events: list[object]) -> None:
        """Events whose times were read: completed, so recording them again is safe."""
        self._free += events


def reusing_clock_for(device: str) -> Clock:
    """`bench.measure.timing.clock_for`, whose CUDA clock reuses its events (`EventClock`)."""
    return EventClock() if device == "cuda" else HostClock()


def release(clock: Clock, rec: StepRecord) -> None:
    """Hand a read step's events back to its clock (a host clock keeps nothing)."""
    if isinstance(clock, EventClock):
        clock.release(rec.events())
        rec.marks, rec.copied = [], None


def is_device_clock(clock: Clock) -> bool:
    return isinstance(clock, CudaClock)
