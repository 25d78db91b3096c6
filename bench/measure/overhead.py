"""The harness against a plain loop: the check that a timing run's own instrumentation (an event
at every phase boundary) does not change what it measures (env.json's `overhead`)."""

from __future__ import annotations

import math

import torch

from bench.execution import variants
from bench.measure import memory
from bench.measure.runner import free_device_memory
from bench.measure.stats import summarize
from bench.measure.timing import clock_for, time_phases
from bench.plan.plan import Plan
from bench.plan.step import build, train_step


def _alternate_harness_and_bare(
    plan: Plan, windows: int, repeats: int
) -> tuple[list[float], list[float], float]:
    """Harness step times, bare-loop step times, and the bare loop's own allocated peak (GiB,
    against the allocation before the state was built; NaN on the CPU)."""
    case = plan.case
    clock = clock_for(case.device)
    cuda = case.device == "cuda"
    harness: list[float] = []
    bare: list[float] = []
    bare_peak = 0
    start = torch.cuda.memory_allocated() if cuda else 0
    state = build(plan)
    phases = variants.prepare(state).phases

    def window() -> None:
        for _ in range(case.steps):
            train_step(state)

    for _ in range(repeats):
        timed = time_phases(phases, warmup=case.warmup, steps=case.steps, clock=clock)
        harness.extend(timed["total"])
        if cuda:  # the allocator's counters live on the host: no sync needed to reset or read
            torch.cuda.reset_peak_memory_stats()
        windowed = time_phases({"window": window}, warmup=1, steps=windows, clock=clock)
        bare.extend(ms / case.steps for ms in windowed["window"])
        if cuda:
            bare_peak = max(bare_peak, torch.cuda.max_memory_allocated())
    return harness, bare, (bare_peak - start) / memory.GIB if cuda else math.nan


def measure_overhead(plan: Plan, *, windows: int = 5, repeats: int = 3) -> dict[str, object]:
    """The harness against a bare loop of the same train step, on one state, alternated.

    The bare loop records one event pair per window of `case.steps` steps and nothing per step;
    its per-step time is the window's time over the step count. Alternating the two `repeats`
    times keeps clock ramps and drift from favouring either. The bare loop also records its own
    peak allocation, the plain-loop figure the case's row's `peak_alloc_gib` should match.
    """
    case = plan.case
    harness, bare, bare_peak = _alternate_harness_and_bare(plan, windows, repeats)
    free_device_memory()  # the state built inside is gone once that call returns
    harness_ms, bare_ms = summarize(harness)["median"], summarize(bare)["median"]
    harness_mean = sum(harness) / len(harness)
    return {
        "case_id": case.case_id,
        "harness_ms": harness_ms,
        "bare_ms": bare_ms,
        # The harness's median step against the bare loop's.
        "overhead_pct": (harness_ms / bare_ms - 1) * 100,
        # Like with like: a window's time is a mean over its steps, so the harness's mean step is
        # the figure that shows the cost of the instrumentation itself; the two differ when the
        # step times have a tail, which the median leaves out.
        "harness_mean_ms": harness_mean,
        "mean_overhead_pct": (harness_mean / bare_ms - 1) * 100,
        "bare_peak_alloc_gib": bare_peak,
        "steps_per_window": case.steps,
        "harness_samples_ms": harness,
        "bare_window_step_ms": bare,
    }
