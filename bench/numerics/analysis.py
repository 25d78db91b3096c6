"""What the convergence runs' summary and traces show, for the report and the Answer (no torch,
no measuring): which runs were looked at for divergence and which diverged (`measured`,
`diverged`), what the traces show around a divergence event (`mechanism`), where each run ended
(`run_ends`) and which gradient a run flushed most (`flushed_most`).

The summary itself, and the divergence rule, are `bench.numerics.run_summary`'s.
"""

from __future__ import annotations

import pandas as pd

from bench.numerics.run_summary import BLOWUP, HEALTHY, NONFINITE, RUN_KEYS, smoothed
from bench.recipes import catalog


def measured(summary: pd.DataFrame) -> pd.DataFrame:
    """The summary rows whose divergence was looked for (a folder older than the column has an
    empty cell)."""
    if "divergence" not in summary:
        return summary.iloc[:0]
    return summary[summary["divergence"].isin([HEALTHY, BLOWUP, NONFINITE])]


def diverged(runs: pd.DataFrame) -> pd.DataFrame:
    """The rows of `measured` runs that diverged."""
    return runs[runs["divergence"] != HEALTHY]


MECHANISM_WINDOW = 100
"""The traces read before and after a divergence event: this many steps either side of it."""
ZERO_LIMIT = 0.01
"""A parameter's gradient counts as flushing at a traced step where more than 1% of its elements
are exactly zero."""


def _run(traces: pd.DataFrame, mode: str, batch_size: int, seed: int) -> pd.DataFrame:
    return traces[
        (traces["mode"] == mode) & (traces["batch_size"] == batch_size) & (traces["seed"] == seed)
    ]


def mechanism(
    traces: pd.DataFrame,
    mode: str,
    batch_size: int,
    seed: int,
    at: int,
    reference: str | None = None,
) -> dict | None:
    """What the traces of one run show around its divergence event at step `at`, beside the
    `reference` run (default: the mode table's float32 reference) with the same batch size and
    seed (same weights, same batches) where it was traced; None where the run has no traces on
    both sides of the event.

    Keys: `zero_since`, the traced step from which, up to the event, some parameter's gradient
    was more than ZERO_LIMIT exactly zero at every traced step (None if not so just before it);
    `zero_module` and `zero_before`, the parameter with the largest mean share of zero gradient
    elements over the MECHANISM_WINDOW steps before the event, and that mean; `zero_early`, its
    mean share over the run's first MECHANISM_WINDOW steps; `loss_before` and `ref_loss_before`,
    the training loss of the run and of the reference at the last traced step before the event;
    `ref_zero_before`,
    the reference's largest mean share over the same steps; `v_ratio_min`, `v_ratio_max`: per
    parameter, the median of Adam's second moment at the last traced step before the event over
    the reference's at that step (the range over parameters); `below_eps2_before`, the largest
    share of second-moment elements below eps² then; `update_before` and `update_after`, the
    largest update RMS over weight RMS in the window before and in the window from the event on;
    `update_abs_after`, the largest update element after."""
    run = _run(traces, mode, batch_size, seed)
    before = run[(run["step"] >= at - MECHANISM_WINDOW) & (run["step"] < at)]
    after = run[(run["step"] >= at) & (run["step"] <= at + MECHANISM_WINDOW)]
    if before.empty or after.empty:
        return None
    zero = before.groupby("module")["grad_zero_share"].mean()
    early = run[(run["step"] < MECHANISM_WINDOW) & (run["module"] == zero.idxmax())]
    # The flushing streak: traced steps up to the event where some gradient was > ZERO_LIMIT zero.
    flushing = run[run["step"] < at].groupby("step")["grad_zero_share"].max() > ZERO_LIMIT
    quiet = flushing.index[~flushing.to_numpy()]
    streak = flushing.index[flushing.index > (quiet.max() if len(quiet) else -1)]
    t_last = before["step"].max()
    last = before[before["step"] == t_last].set_index("module")
    ref = _run(traces, reference or catalog.reference(), batch_size, seed)
    ref_before = ref[(ref["step"] >= at - MECHANISM_WINDOW) & (ref["step"] < at)]
    ref_last = ref[ref["step"] == t_last].set_index("module")
    ratio = (last["exp_avg_sq_median"] / ref_last["exp_avg_sq_median"]).dropna()
    return {
        "zero_since": int(streak.min()) if len(streak) else None,
        "zero_module": str(zero.idxmax()),
        "zero_before": float(zero.max()),
        "zero_early": float(early["grad_zero_share"].mean()) if len(early) else float("nan"),
        "loss_before": float(before.groupby("step")["loss"].first().median()),
        "ref_loss_before": (
            float(ref_before.groupby("step")["loss"].first().median())
            if len(ref_before)
            else float("nan")
        ),
        "ref_zero_before": (
            float(ref_before.groupby("module")["grad_zero_share"].mean().max())
            if len(ref_before)
            else float("nan")
        ),
        "v_ratio_min": float(ratio.min()) if len(ratio) else float("nan"),
        "v_ratio_max": float(ratio.max()) if len(ratio) else float("nan"),
        "below_eps2_before": float(before["exp_avg_sq_below_eps2_share"].max()),
        "update_before": float(before["update_rms_ratio"].max()),
        "update_after": float(after["update_rms_ratio"].max()),
        "update_abs_after": float(after["update_max_abs"].max()),
    }


def run_ends(steps: pd.DataFrame) -> pd.DataFrame:
    """Per run, where it ended: its last step, the smoothed loss there, its loss scale at the
    start and at the end, the steps at which the scale changed, and its skipped steps."""
    rows = []
    steps = steps.sort_values([*RUN_KEYS, "step"]).copy()
    steps["smooth"] = smoothed(steps)
    for key, g in steps.groupby(RUN_KEYS):
        scale = g["scale"].astype(float)
        changed = g["step"][scale.ne(scale.shift()) & scale.shift().notna()]
        rows.append(
            {
                **dict(zip(RUN_KEYS, key, strict=True)),
                "last_step": int(g["step"].iloc[-1]) + 1,
                "final_loss": float(g["smooth"].iloc[-1]),
                "first_scale": float(scale.iloc[0]),
                "final_scale": float(scale.iloc[-1]),
                "scale_changes": [int(s) for s in changed],
                "skipped_steps": int(g["skipped"].astype(bool).sum()),
            }
        )
    return pd.DataFrame(rows)


def flushed_most(
    traces: pd.DataFrame, mode: str, batch_size: int, seed: int
) -> tuple[str, float] | None:
    """The parameter whose gradient was exactly zero most often over one run's traced steps after
    its first MECHANISM_WINDOW, and its mean share of zero elements there; None for a run
    without such traces."""
    run = _run(traces, mode, batch_size, seed)
    zero = run[run["step"] >= MECHANISM_WINDOW].groupby("module")["grad_zero_share"].mean()
    if zero.empty:
        return None
    return str(zero.idxmax()), float(zero.max())
