"""A timing run's report section on what GradScaler costs: fp16 autocast with GradScaler against
the same without it, case by case (each batch size, Adam and variant both ran), on training steps
alone, each judged by `bench.verdicts.timing.scaler_cost`. Pure: reads rows and env.json."""

from __future__ import annotations

import pandas as pd

from bench.ground import catalog
from bench.store import results
from bench.store.run_env import RunEnv
from bench.text import tables
from bench.verdicts import timing

AXES = {"batch_size": "batch", "optimizer": "Adam", "variant": "variant"}
"""The axes a row of the table names, in its order; the other axes of a pair are equal too."""


def table(ok: pd.DataFrame, env: RunEnv) -> pd.DataFrame:
    """One row per case that both fp16 modes passed: their medians, the ratio with its span over
    the two rows' p10–p90, and the verdict with why."""
    scaled_mode, bare_mode = catalog.fp16_pair()
    keys = [a for a in results.axes() if a != "mode"]
    scaled = ok[ok["mode"] == scaled_mode]
    bare = ok[ok["mode"] == bare_mode].set_index(keys)
    interleaved = timing.scaler_cost_reason(env, ok[ok["mode"].isin([scaled_mode, bare_mode])])
    rows = []
    for _, row in scaled.iterrows():
        key = tuple(row[k] for k in keys)
        if key not in bare.index:
            continue
        other = bare.loc[key]
        cost = timing.scaler_cost(row, other, interleaved=interleaved is None)
        rows.append(
            {
                **{label: row[axis] for axis, label in AXES.items()},
                f"{scaled_mode} ms": row["total_ms"],
                f"{bare_mode} ms": other["total_ms"],
                "with / without": cost.ratio,
                "p10–p90 span": f"{tables.number(cost.lo)}–{tables.number(cost.hi)}",
                "verdict": cost.verdict,
                "why": cost.why,
            }
        )
    return pd.DataFrame(rows)


def section(df: pd.DataFrame, env: RunEnv) -> list[str]:
    """The section, or nothing where the run has no case both fp16 modes passed."""
    found = table(timing.contenders(df), env)
    if found.empty:
        return []
    return [
        "## What GradScaler costs",
        "",
        "fp16 autocast with GradScaler against the same without it, on the steps that applied "
        "their update (GradScaler's skipped steps are left out). `with / without`: the medians' "
        "ratio, above 1 where the scaler lengthens the step; `p10–p90 span`: the ratio's range "
        "over the two rows' p10–p90. A sign is said only where the two p10–p90 do not overlap "
        "and, in a run that timed each case once, where the ratio lies beyond "
        f"{timing.RUN_RATIO_SPAN[0]:.4g}–{timing.RUN_RATIO_SPAN[1]:.4g}, what two runs of one "
        "grid differ by (docs/methodology.md).",
        "",
        tables.markdown(found),
        "",
    ]
