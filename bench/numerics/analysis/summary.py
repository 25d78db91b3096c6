"""summary.csv: one row per convergence run from the step, held-out and step-time tables
(`summarize_runs`), with the smoothing (`smoothed`) and the divergence rule (`divergence`) the
report reads back."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from bench.ground import catalog
from bench.numerics.measure.tables import TABLES

SMOOTH_STEPS = 20
"""Window of the rolling mean of the training loss used for final losses, time to target, plots."""
RUN_KEYS = ["mode", "batch_size", "seed"]
"""The columns that name one convergence run."""
DIVERGE_FACTOR = 10.0
"""A run diverges where its training loss exceeds 10 times its running minimum..."""
DIVERGE_STEPS = 20
"""...at 20 steps in a row (a spike that recovers sooner is not divergence), or is non-finite."""
BLOWUP, NONFINITE, HEALTHY = "blowup", "nonfinite", "none"
"""`divergence` of a summary row: its first event's kind, or none (empty: not measured)."""


def divergence(losses: Sequence[float]) -> tuple[int, str] | None:
    """The first divergence of one run's per-step loss, or None: (step, BLOWUP) where the loss
    stays above DIVERGE_FACTOR × its running minimum DIVERGE_STEPS steps, or (step, NONFINITE)."""
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
    """One row per run at the common horizon, with its first divergence over all its steps."""
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
    target = out[out["mode"] == catalog.reference()].set_index(["batch_size", "seed"])["final_loss"]
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
