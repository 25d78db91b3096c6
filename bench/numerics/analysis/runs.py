"""What the convergence runs' summary and traces show, for the report and the Answer: divergence
(`measured`, `diverged`), losses against the reference seed by seed (`versus`), runs that learned
(`learned`), the traces around an event (`mechanism`), `run_ends` and `flushed_most`."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from bench.ground import catalog
from bench.numerics.analysis.summary import BLOWUP, HEALTHY, NONFINITE, RUN_KEYS, smoothed


def measured(summary: pd.DataFrame) -> pd.DataFrame:
    """The summary rows whose divergence was looked for (older folders' cells are empty)."""
    if "divergence" not in summary:
        return summary.iloc[:0]
    return summary[summary["divergence"].isin([HEALTHY, BLOWUP, NONFINITE])]


def diverged(runs: pd.DataFrame) -> pd.DataFrame:
    """The rows of `measured` runs that diverged."""
    return runs[runs["divergence"] != HEALTHY]


LOSS_GAP = 0.10
"""A final training loss more than 10% above fp32's at the same batch size is worse."""
LEARNED_RATIO = 1.5
"""A run learned a task of known perfect held-out loss when its own ends within 1.5× of it (the
transformer's task: a plateau near log(states), then a drop near the perfect loss)."""


@dataclass(frozen=True)
class Versus:
    """A mode's final losses at one batch size against the reference's, seed by seed (a plateau's
    end varies with the seed): worse ends above the reference's worst seed by LOSS_GAP, or NaN."""

    loss: float
    """The mode's mean final loss over seeds (NaN when a seed went non-finite)."""
    ref: float
    ref_low: float
    ref_high: float
    seeds: int
    worse: int
    """The mode's seeds that ended more than LOSS_GAP above the reference's worst seed."""

    @property
    def within(self) -> bool:
        return self.worse == 0

    def describe(self, reference: str) -> str:
        """The verdict as a clause: `within 10%`, or `**not** within 10% in 1 of 2 seeds`, with
        the reference's seeds' range where they differ by more than the gap."""
        gap = f"{LOSS_GAP:.0%}"
        spread = self.ref_high > self.ref_low * (1 + LOSS_GAP)
        ref_seeds = (
            f" ({reference}'s own seeds end between {self.ref_low:.3g} and {self.ref_high:.3g})"
            if spread
            else ""
        )
        if self.worse:
            return f"**not** within {gap} in {self.worse} of {self.seeds} seeds{ref_seeds}"
        if self.loss <= self.ref * (1 + LOSS_GAP):
            return f"within {gap}{ref_seeds}"
        return f"within {gap} of {reference}'s worst seed{ref_seeds}"


def versus(summary: pd.DataFrame, mode: str, batch_size: int, reference: str) -> Versus | None:
    """`mode`'s final losses at `batch_size` against `reference`'s; None where either is missing."""
    at = summary[summary["batch_size"] == batch_size]
    mine = at.loc[at["mode"] == mode, "final_loss"].astype(float)
    ref = at.loc[at["mode"] == reference, "final_loss"].astype(float)
    if mine.empty or ref.empty:
        return None
    high = float(ref.max())
    worse = sum(1 for v in mine if not math.isfinite(v) or v > high * (1 + LOSS_GAP))
    return Versus(
        loss=float(mine.mean()),
        ref=float(ref.mean()),
        ref_low=float(ref.min()),
        ref_high=high,
        seeds=len(mine),
        worse=worse,
    )


def learned(summary: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Columns batch_size, mode, learned, seeds; empty where the perfect loss is not known."""
    cols = ["batch_size", "mode", "learned", "seeds"]
    if runs is None or runs.empty or "true_heldout_loss" not in runs:
        return pd.DataFrame(columns=cols)
    true = runs.dropna(subset=["true_heldout_loss"])[[*RUN_KEYS, "true_heldout_loss"]]
    if true.empty:
        return pd.DataFrame(columns=cols)
    both = summary.merge(true, on=RUN_KEYS)
    both["ok"] = both["heldout_loss"] <= LEARNED_RATIO * both["true_heldout_loss"]
    out = both.groupby(["batch_size", "mode"], sort=False)["ok"].agg(["sum", "count"])
    out.columns = ["learned", "seeds"]
    return out.reset_index().astype({"learned": int, "seeds": int})


SPARSE_SHARE = 0.5
"""A parameter whose fp32 gradient is zero in more than half its elements (mean over the traced
steps) is sparse by construction (an embedding's rows of absent tokens), not flushed."""


def sparse_parameters(traces: pd.DataFrame) -> set[str]:
    """The parameters sparse in fp32 (SPARSE_SHARE) that folds leave out, unless all are."""
    ref = traces[traces["mode"] == catalog.reference()]
    if ref.empty:
        return set()
    share = ref.groupby("module")["grad_zero_share"].mean()
    sparse = set(share[share > SPARSE_SHARE].index)
    return sparse if len(sparse) < traces["module"].nunique() else set()


MECHANISM_WINDOW = 100
"""The traces read before and after a divergence event: this many steps either side of it."""
ZERO_LIMIT = 0.01
"""A gradient flushes at a traced step where more than 1% of its elements are exactly zero."""


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
    """What one run's traces show around its divergence at step `at`, beside the `reference` run
    (default fp32) of its batch size and seed; None without traces on both sides. "Before": the
    MECHANISM_WINDOW steps before. Keys: `zero_since` (the traced step from which some gradient
    was over ZERO_LIMIT zero at every one), `zero_module`, `zero_before` (the largest mean zero
    share before), `zero_early` (its share in the first window), `loss_before` and the
    reference's `ref_loss_before`, `ref_zero_before`, `v_ratio_min`, `v_ratio_max` (Adam's
    second-moment median over the reference's, range over parameters), `below_eps2_before`,
    `update_before`, `update_after` (largest update RMS over weight RMS), `update_abs_after`."""
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
    """Per run: its last step, smoothed loss there, first and final scale, changes, skips."""
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
    """The non-sparse parameter most often zero after MECHANISM_WINDOW steps, and its share."""
    run = _run(traces, mode, batch_size, seed)
    run = run[~run["module"].isin(sparse_parameters(traces))]  # zero by construction: not flushed
    zero = run[run["step"] >= MECHANISM_WINDOW].groupby("module")["grad_zero_share"].mean()
    if zero.empty:
        return None
    return str(zero.idxmax()), float(zero.max())


def zero_share_after(traces: pd.DataFrame, mode: str, batch_size: int, module: str) -> float:
    """`module`'s mean zero share after MECHANISM_WINDOW steps over `mode`'s seeds; NaN if none."""
    sel = traces[
        (traces["mode"] == mode)
        & (traces["batch_size"] == batch_size)
        & (traces["module"] == module)
        & (traces["step"] >= MECHANISM_WINDOW)
    ]
    return float(sel["grad_zero_share"].mean()) if len(sel) else float("nan")
