"""Summaries of the convergence runs, from the per-step tables (no torch, no measuring).

`smoothed` is the rolling mean of a run's training loss that final losses, time to target and the
loss-curve figure all use; `divergence` finds a run's first divergence event in its per-step loss;
`summarize_runs` turns the step, held-out and step-time tables into one row per run.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from bench.numerics.tables import TABLES

SMOOTH_STEPS = 20
"""Window of the rolling mean of the training loss used for final losses, time to target, plots."""
RUN_KEYS = ["mode", "batch_size", "seed"]
"""The columns that name one convergence run."""
DIVERGE_FACTOR = 10.0
"""A run diverges where its training loss exceeds 10 times its running minimum..."""
DIVERGE_STEPS = 20
"""...at 20 steps in a row (a spike that recovers sooner is not divergence), or is non-finite."""
BLOWUP, NONFINITE, HEALTHY = "blowup", "nonfinite", "none"
"""`divergence` of a summary row: the kind of a run's first event, or none (an empty cell: a
folder older than the column, so not measured)."""


def divergence(losses: Sequence[float]) -> tuple[int, str] | None:
    """The first divergence event of one run's per-step training loss (index = step): (step,
    BLOWUP) where the loss first exceeds DIVERGE_FACTOR × its running minimum (over the steps up
    to it) and stays above at each of the next DIVERGE_STEPS - 1 steps too, or (step, NONFINITE)
    at the first non-finite loss, whichever comes first; None for a healthy run. A blow-up that
    the run ends before DIVERGE_STEPS steps have passed is not confirmed, so not counted."""
    loss = np.asarray(losses, dtype=float)
    finite = np.isfinite(loss)
    first_nonfinite = int(np.argmin(finite)) if not finite.all() else None
    # Non-finite losses never lower the running minimum; the event they are comes first anyway.
    running_min = np.minimum.accumulate(np.where(finite, loss, np.inf))
    above = finite & (loss > DIVERGE_FACTOR * running_min)
    # Windows of DIVERGE_STEPS steps all above: their count of `above` is DIVERGE_STEPS.
    total = np.concatenate([[0], np.cumsum(above)])
    counts = total[DIVERGE_STEPS:] - total[:-DIVERGE_STEPS]  # window starting at each step
    full = np.flatnonzero(counts == DIVERGE_STEPS)
    first_blowup = int(full[0]) if len(full) else None
    events = [(first_blowup, BLOWUP), (first_nonfinite, NONFINITE)]
    events = [(step, kind) for step, kind in events if step is not None]
    return min(events) if events else None


def smoothed(steps: pd.DataFrame) -> pd.Series:
    """Rolling mean of each run's per-step training loss, aligned with `steps`' index."""
    steps = steps.sort_values([*RUN_KEYS, "step"])
    return steps.groupby(RUN_KEYS)["loss"].transform(
        lambda s: s.rolling(SMOOTH_STEPS, min_periods=1).mean()
    )


def summarize_runs(
    steps: pd.DataFrame, evals: pd.DataFrame, runs: pd.DataFrame, horizon: int
) -> pd.DataFrame:
    """Per run, at the common horizon: final smoothed loss, held-out loss and accuracy, non-finite
    and skipped steps, and steps and seconds to reach the final loss of fp32 with the same batch
    size and seed; over all its steps, its first divergence event (`divergence`). No runs (every
    convergence job failed) give no rows, with the columns."""
    columns = list(TABLES["summary"].columns)
    if steps.empty:
        return pd.DataFrame(columns=columns)
    # Divergence over each run's every step: a run longer than the horizon may diverge later.
    events = {
        key: divergence(g.sort_values("step")["loss"].to_numpy(float))
        for key, g in steps.groupby(RUN_KEYS)
    }
    steps = steps[steps["step"] < horizon].sort_values([*RUN_KEYS, "step"]).copy()
    steps["smooth"] = smoothed(steps)
    last = steps.groupby(RUN_KEYS).tail(1).set_index(RUN_KEYS)
    rows = []
    for key, group in steps.groupby(RUN_KEYS):
        ev = evals[(evals[RUN_KEYS] == pd.Series(key, index=RUN_KEYS)).all(axis=1)]
        at = ev[ev["step"] == horizon]
        rows.append(
            {
                **dict(zip(RUN_KEYS, key, strict=True)),
                "optimizer": group["optimizer"].iloc[0],
                "final_loss": last.loc[key, "smooth"],
                "heldout_loss": at["heldout_loss"].iloc[0] if len(at) else float("nan"),
                "heldout_acc": at["heldout_acc"].iloc[0] if len(at) else float("nan"),
                "nonfinite_steps": int((~np.isfinite(group["loss"].to_numpy(float))).sum()),
                "skipped_steps": int(group["skipped"].sum()),
                "final_scale": group["scale"].iloc[-1],
                "diverged_at_step": events[key][0] if events[key] else None,
                "divergence": events[key][1] if events[key] else HEALTHY,
            }
        )
    if "model_state_gib" not in runs:  # a folder older than the column: not measured
        runs = runs.assign(model_state_gib=float("nan"))
    out = pd.DataFrame(rows).merge(
        runs[[*RUN_KEYS, "step_ms", "model_state_gib"]], on=RUN_KEYS, how="left"
    )
    # The target of a run is what fp32 reached at the end with the same seed: same initial
    # weights, same batches.
    target = out[out["mode"] == "fp32"].set_index(["batch_size", "seed"])["final_loss"]
    out["target_loss"] = [
        target.get((b, sd), float("nan"))
        for b, sd in zip(out["batch_size"], out["seed"], strict=True)
    ]
    first_hit = (
        steps.merge(out[[*RUN_KEYS, "target_loss"]], on=RUN_KEYS)
        .query("smooth <= target_loss")
        .groupby(RUN_KEYS)["step"]
        .min()
    )
    out["steps_to_target"] = [
        int(first_hit[k]) + 1 if k in first_hit.index else None
        for k in zip(out["mode"], out["batch_size"], out["seed"], strict=True)
    ]
    out["time_to_target_s"] = [
        n * ms / 1e3 if n is not None else float("nan")
        for n, ms in zip(out["steps_to_target"], out["step_ms"], strict=True)
    ]
    return out.sort_values(["batch_size", "mode", "seed"]).reset_index(drop=True)[columns]


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
    traces: pd.DataFrame, mode: str, batch_size: int, seed: int, at: int, reference: str = "fp32"
) -> dict | None:
    """What the traces of one run show around its divergence event at step `at`, beside the
    `reference` run with the same batch size and seed (same weights, same batches) where it was
    traced; None where the run has no traces on both sides of the event.

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
    ref = _run(traces, reference, batch_size, seed)
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
