"""The figures a case's row derives from its raw samples: the statistics of its training steps,
throughput, TFLOP/s and the share of its floor, recomputed the same way for a row measured now
and for one whose rounds a job pools (`rederive`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.measure.stats import is_noisy, phase_columns
from bench.measure.timing import NoTrainingStep
from bench.plan.plan import Plan
from bench.store import results
from bench.store.schema import Row

PHASES = tuple(results.PHASES)


@dataclass(frozen=True)
class Floor:
    """What the figures derived from a case's samples divide by: its counted work, its global
    batch and its floors, as its row's columns hold them (`of`)."""

    gflop: float
    """Forward plus backward matmul work of one rank's batch, in GFLOP."""
    global_batch_size: int
    floor_ms: float
    """The whole step's floor, its collectives' included."""
    phase_floor_ms: dict[str, float]
    """Each phase's floor (`<phase>_floor_ms`), for the phases the row has one for."""

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> Floor:
        """The floor a row's columns state: a row being measured, or one a round kept
        (`rederive`)."""
        return cls(
            gflop=row["fwd_gflop"] + row["bwd_gflop"],
            global_batch_size=row["global_batch_size"],
            floor_ms=row["floor_ms"],
            phase_floor_ms={p: row[f"{p}_floor_ms"] for p in PHASES if f"{p}_floor_ms" in row},
        )


def derived_columns(plan: Plan, samples: dict[str, list[float]], floor: Floor) -> dict[str, object]:
    """Statistics of the samples and the figures derived from them. A phase the variant fused
    away (no samples of its own) gets no columns: it was not measured. `tflops` is per GPU: the
    matmul work of one rank's batch over the step. The statistics are over the steps that
    applied their update; `skipped_steps` counts the timed steps GradScaler skipped (`SKIPPED`
    samples, `bench.measure.timing`)."""
    skipped = int(np.isnan(np.asarray(samples["total"], dtype=float)).sum())
    if skipped == len(samples["total"]):
        raise NoTrainingStep(f"GradScaler skipped all {skipped} timed steps")
    columns: dict[str, object] = phase_columns(samples)
    columns["skipped_steps"] = skipped
    total_ms = columns["total_ms"]
    columns["samples_per_s"] = floor.global_batch_size / (total_ms * 1e-3)
    if plan.workload.unit == "tokens":  # a sample of a token workload is a sequence of them
        columns["tokens_per_s"] = columns["samples_per_s"] * plan.workload.per_sample(plan.size)
    columns["samples_per_s_per_gpu"] = plan.case.batch_size / (total_ms * 1e-3)
    columns["tflops"] = floor.gflop / total_ms  # GFLOP per ms is TFLOP per s
    columns["pct_of_floor"] = floor.floor_ms / total_ms * 100
    for phase in PHASES:
        if phase in samples:
            columns[f"{phase}_pct_of_floor"] = (
                floor.phase_floor_ms[phase] / columns[f"{phase}_ms"] * 100
            )
            columns[f"{phase}_share"] = columns[f"{phase}_ms"] / total_ms
    columns["noisy"] = is_noisy(samples["total"])
    return columns


def rederive(plan: Plan, row: Row, samples: dict[str, list[float]]) -> Row:
    """`row` with its statistics and the figures derived from them recomputed over `samples`:
    a case timed in several rounds (`bench.jobs.suite`) gets its row from its last round and
    its statistics from the windows of every round."""
    return {**row, **derived_columns(plan, samples, Floor.of(row))}
