"""How many runs a job trains side by side on one device: the one rule of the quality study's
workers and the `sweep` driver's packed seeds (docs/quality.md, "The study in one command")."""

from __future__ import annotations

import math
import os

import torch

from bench.measure.memory import GIB

CONTEXT_GIB = 1.0
"""What a process's CUDA context and libraries hold beside its tensors, about."""
MEMORY_SHARE = 0.8
"""The share of the GPU's free memory packed runs may take together."""


def free_gib() -> float:
    """The GPU's free memory now, GiB (a test injects its own)."""
    return torch.cuda.mem_get_info()[0] / GIB


def side_by_side(workers: int, device: str, peak_gib: float | None, runs: int) -> tuple[int, str]:
    """How many of `runs` train at once, and why: `workers` where given (above 0), else the
    auto rule (module docstring) at `peak_gib`, the largest run's measured peak (None or NaN
    where one was not measured: one at a time)."""
    if workers:
        return max(1, min(workers, runs)), f"--workers {workers}"
    if device != "cuda":
        return 1, f"--workers 0 on {device}: one at a time"
    if peak_gib is None or math.isnan(peak_gib):
        return 1, "--workers 0, but a run's memory was not measured: one at a time"
    cores = len(os.sched_getaffinity(0))
    free = free_gib()
    per_run = float(peak_gib) + CONTEXT_GIB
    fits = int(MEMORY_SHARE * free // per_run)
    return max(1, min(cores, fits, runs)), (
        f"auto: {cores} CPU cores; {fits} fit in {MEMORY_SHARE:.0%} of {free:.4g} GiB free at "
        f"{per_run:.3g} GiB a run"
    )
