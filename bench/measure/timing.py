"""The one timing function of ampbench (`time_phases`), and the clocks it reads: a mark at every
phase boundary, one synchronize after the timed window, raw samples out; `time_windows` times
windows until `bench.measure.adaptive` says stop. A step GradScaler skipped is `SKIPPED`."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Protocol

import torch

from bench.faults import Nonfinite
from bench.measure.adaptive import SETTLE_CAP, SETTLE_QUIET, StopRule


class Clock(Protocol):
    def mark(self) -> object:
        """Record a point in time (on the device's stream for device clocks)."""

    def finish(self) -> None:
        """Wait until every mark so far has a time. Called once, after the timed window."""

    def elapsed_ms(self, start: object, end: object) -> float: ...


class CudaClock:
    """CUDA events on the current stream; elapsed times are device times."""

    def mark(self) -> torch.cuda.Event:
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def finish(self) -> None:
        torch.cuda.synchronize()

    def elapsed_ms(self, start: torch.cuda.Event, end: torch.cuda.Event) -> float:
        return start.elapsed_time(end)


class HostClock:
    """`time.perf_counter`; right for the CPU, whose torch ops return when their work is done."""

    def mark(self) -> float:
        return time.perf_counter()

    def finish(self) -> None:
        pass

    def elapsed_ms(self, start: float, end: float) -> float:
        return (end - start) * 1e3


class StepWatch(Protocol):
    """Which steps applied their update. `start` and `mark` record, outside every timed region
    and without a sync, what tells, before the first step and after each; `skipped` reads the
    marks after a sync: one flag per step marked since the last call (or `start`), True where
    the step applied nothing."""

    def start(self) -> None:
        """Forget earlier marks; record the state before the next step."""

    def mark(self) -> None:
        """Record the state after a step."""

    def skipped(self) -> list[bool]: ...

    def stuck(self) -> str | None:
        """Why no later step can apply its update (GradScaler's scale 0 or not finite), or
        None; read after a sync."""


class NoTrainingStep(Nonfinite):
    """Every timed step applied no update, or none can: there is no training step to time (a
    row's status `nonfinite`, wherever a fault becomes one)."""


SKIPPED = math.nan
"""A timed step that applied no update: its sample in every phase (null in samples.jsonl)."""


def clock_for(device: str) -> Clock:
    return CudaClock() if device == "cuda" else HostClock()


def time_phases(
    phases: Mapping[str, Callable[[], object]],
    *,
    warmup: int,
    steps: int,
    clock: Clock,
    warmup_ms: float | None = None,
    watch: StepWatch | None = None,
) -> dict[str, list[float]]:
    """Run `steps` timed steps after `warmup` untimed ones; return per-step milliseconds.

    A step calls each phase in order. The result maps each phase name, and "total", to a list of
    `steps` samples. The phases must not synchronize with the device themselves; where one has to
    (GradScaler with a non-fused optimizer), that cost is part of what it measures. `warmup_ms`:
    the warm-up also stops once its steps have taken that long (`warm_up`). `watch`: marked
    before the first step and after each, between one step's last clock mark and the next one's
    first (untimed); a step it says was skipped gets `SKIPPED` in every phase.
    """
    if steps <= 0:
        raise ValueError(f"steps must be positive, got {steps!r}")
    if "total" in phases:
        raise ValueError("'total' is reserved for the whole step; rename that phase")
    warm_up(phases, warmup, clock, budget_ms=warmup_ms)
    # Drain the warm-up before the window opens, so that its tail is not charged to step one.
    clock.finish()

    marks: list[list[object]] = []
    if watch is not None:
        watch.start()
    for _ in range(steps):
        row = [clock.mark()]
        for run in phases.values():
            run()
            row.append(clock.mark())
        marks.append(row)
        if watch is not None:
            watch.mark()  # after the step's last event: outside the timed region
    clock.finish()  # the one sync: every event above now has a time

    skipped = watch.skipped() if watch is not None else [False] * steps
    samples = {
        name: [
            SKIPPED if skip else clock.elapsed_ms(row[i], row[i + 1])
            for row, skip in zip(marks, skipped, strict=True)
        ]
        for i, name in enumerate(phases)
    }
    samples["total"] = [
        SKIPPED if skip else clock.elapsed_ms(row[0], row[-1])
        for row, skip in zip(marks, skipped, strict=True)
    ]
    return samples


def settle(
    phases: Mapping[str, Callable[[], object]],
    watch: StepWatch,
    clock: Clock,
    *,
    quiet: int = SETTLE_QUIET,
    cap: int = SETTLE_CAP,
) -> int:
    """Run untimed steps until `quiet` in a row applied their update, at most `cap`; returns the
    steps run. Each step is read back at once (a sync a step): nothing is timed yet. A state
    that can apply no update again (a scale backed off to 0, or not finite) never settles: it
    raises `NoTrainingStep` (the case's status `nonfinite`)."""
    applied = 0
    watch.start()
    for n in range(1, cap + 1):
        for run in phases.values():
            run()
        watch.mark()
        clock.finish()
        applied = 0 if watch.skipped()[0] else applied + 1
        why = watch.stuck()
        if why is not None:
            raise NoTrainingStep(f"{why} (after {n} untimed steps)")
        if applied >= quiet:
            return n
    return cap


WARMUP_MS = 50.0
"""A case's warm-up budget: at most `--warmup` steps, but no more once they have taken this long
(triton's `do_bench` budgets its warm-up in time too). Steps of a few ms get every warm-up step;
a step over the budget gets one, after the memory pass and any compiling or capture have
already run the step."""


def warm_up(
    phases: Mapping[str, Callable[[], object]],
    warmup: int,
    clock: Clock,
    *,
    budget_ms: float | None = None,
) -> int:
    """Run up to `warmup` untimed steps; with `budget_ms`, stop once they have taken that long
    (at least one step). Returns the steps run. Knowing how long they took waits for each step,
    which is harmless here: nothing is timed yet, and the window opens after a drain anyway."""
    start = clock.mark() if budget_ms is not None else None
    for i in range(warmup):
        for run in phases.values():
            run()
        if start is not None and budget_ms is not None and i + 1 < warmup:
            end = clock.mark()
            clock.finish()
            if clock.elapsed_ms(start, end) >= budget_ms:
                return i + 1
    return warmup


def time_settled(
    phases: Mapping[str, Callable[[], object]],
    *,
    warmup: int,
    steps: int,
    clock: Clock,
    watch: StepWatch | None,
) -> dict[str, list[float]]:
    """`time_phases` of a training step: with a `watch` (a mode that scales its loss), the
    scale settles first (`settle`) and a skipped timed step is `SKIPPED`; a window whose every
    step was skipped raises `NoTrainingStep`. The studies' and the largest-batch search's timed
    steps; a timing run's windows are `time_windows`'s."""
    if watch is not None:
        settle(phases, watch, clock)
    samples = time_phases(phases, warmup=warmup, steps=steps, clock=clock, watch=watch)
    if all(math.isnan(ms) for ms in samples["total"]):
        raise NoTrainingStep(f"GradScaler skipped all {steps} timed steps")
    return samples


def time_windows(
    phases: Mapping[str, Callable[[], object]],
    *,
    warmup: int,
    steps: int,
    rule: StopRule,
    clock: Clock,
    warmup_ms: float | None = None,
    watch: StepWatch | None = None,
) -> tuple[list[dict[str, list[float]]], str]:
    """Timed windows of `steps` steps, one `time_phases` window each on the same warm state,
    until `rule` says stop: returns the windows and why they stopped (`bench.measure.adaptive`).
    The warm-up, before the first window only, stops at `warmup` steps or `warmup_ms`.

    A window's median is one observation of the case: the spread between windows is the drift
    one window cannot show. The rule reads a window's samples after the window's one
    synchronize, so deciding adds no sync to any timed region."""
    windows: list[dict[str, list[float]]] = []
    while True:
        first = not windows
        windows.append(
            time_phases(
                phases,
                warmup=warmup if first else 0,
                steps=steps,
                clock=clock,
                warmup_ms=warmup_ms if first else None,
                watch=watch,
            )
        )
        reason = rule.stop([w["total"] for w in windows])
        if reason is not None:
            return windows, reason
