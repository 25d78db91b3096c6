"""Report section 4, convergence: the runs per batch size and mode, their figures, the traces."""

from __future__ import annotations

import pandas as pd

from bench.numerics.analysis.runs import (
    LEARNED_RATIO,
    diverged,
    learned,
    measured,
    sparse_parameters,
)
from bench.numerics.analysis.summary import SMOOTH_STEPS
from bench.numerics.render.markdown import no_rows, percent, table_file
from bench.store.run_env import RunEnv
from bench.text.tables import markdown

TRACE_WINDOW = 50
"""The traces shown around a divergence event: this many steps either side of it."""


def convergence_section(t: dict, env: RunEnv) -> list[str]:
    """The task and settings, the runs' figures per batch size and mode, figures, traces."""
    s = t["summary"]
    cfg = env.get("numerics_config", {})
    if s.empty:
        return ["## 4. Convergence", "", no_rows(t["failed"], "convergence"), ""]
    agg = (
        s.groupby(["batch_size", "mode"], sort=False)
        .agg(
            seeds=("seed", "count"),
            final_loss=("final_loss", "mean"),
            final_loss_min=("final_loss", "min"),
            final_loss_max=("final_loss", "max"),
            heldout_loss=("heldout_loss", "mean"),
            heldout_acc=("heldout_acc", "mean"),
            nonfinite_steps=("nonfinite_steps", "sum"),
            skipped_steps=("skipped_steps", "sum"),
            step_ms=("step_ms", "mean"),
            target_loss=("target_loss", "mean"),
            reached=("steps_to_target", lambda v: int(v.notna().sum())),
            time_to_target_s=("time_to_target_s", "mean"),
        )
        .reset_index()
    )
    agg["time to fp32's final loss"] = [
        f"{tt:.3g} s" if r == n else f"not reached by {n - r} of {n} seeds"
        for tt, r, n in zip(agg["time_to_target_s"], agg["reached"], agg["seeds"], strict=True)
    ]
    agg = agg.drop(columns=["reached", "time_to_target_s"])
    looked = measured(s)
    if len(looked):  # a folder older than the column has empty cells: not shown
        counts = diverged(looked).groupby(["batch_size", "mode"]).size()
        agg["diverged seeds"] = [
            int(counts.get((b, m), 0)) for b, m in zip(agg["batch_size"], agg["mode"], strict=True)
        ]
    taught = learned(s, t.get("runs"))
    learned_note = ""
    if len(taught):
        done = taught.set_index(["batch_size", "mode"])["learned"]
        agg["learned"] = [
            f"{done.get((b, m), 0)}/{n}"
            for b, m, n in zip(agg["batch_size"], agg["mode"], agg["seeds"], strict=True)
        ]
        learned_note = (
            f" `learned`: the seeds whose held-out loss at the end is within {LEARNED_RATIO:g}× "
            "the perfect model's."
        )
    return [
        "## 4. Convergence",
        "",
        f"{task_sentence(cfg, t.get('runs'))} Adam, lr {cfg.get('lr')}, {cfg.get('optimizer')}; "
        f"{cfg.get('steps')} steps per run, seeds {cfg.get('seeds')}. "
        f"`final_loss`: the training loss's {SMOOTH_STEPS}-step mean at step "
        f"{cfg.get('steps')}, mean over seeds (min and max beside it); time to target: steps to "
        "reach the final loss of fp32 with the same batch size and seed, × the run's step time "
        f"measured apart with the harness's timing function.{_step_note(t.get('runs'))}"
        f"{learned_note}",
        "",
        markdown(agg),
        "",
        "![loss curves](loss_curves.png)",
        "",
        "![loss scale](scale.png)",
        "",
        *traces_section(t),
    ]


def _step_note(runs: pd.DataFrame | None) -> str:
    """The step's options the runs trained with (none for an older folder)."""
    if runs is None or "step_options" not in runs:
        return ""
    phrases = runs["step_options"].dropna().unique()
    return f" The step: {'; or '.join(phrases)}." if len(phrases) else ""


def traces_section(t: dict) -> list[str]:
    """The traces' figure, and each diverging run's traces within TRACE_WINDOW of its event."""
    tr, s = t["traces"], t["summary"]
    if tr.empty:
        return []
    out = [
        "### Traces",
        "",
        f"Every traced step of each run, per parameter (`{table_file(t, 'traces')}`), outside any "
        "timed region: the share of `param.grad` exactly zero, Adam's second moment (median, "
        "share below eps²) and first moment (median |exp_avg|), the update's RMS over the weights' "
        "RMS and its largest element, and the loss scale. The figure folds the parameters "
        "(largest zero share and update, smallest median second moment)"
        f"{_sparse_note(tr)}; one colour per mode, one line style per batch size and seed.",
        "",
        "![traces](traces.png)",
        "",
    ]
    events = diverged(measured(s))
    if events.empty:
        looked = len(measured(s)) > 0
        what = "No run diverged" if looked else "Divergence was not looked for in this folder"
        return [*out, f"{what}: no traces around a divergence to show.", ""]
    keys = ["mode", "batch_size", "seed"]
    for _, e in events.sort_values(["batch_size", "mode", "seed"]).iterrows():
        at = int(e["diverged_at_step"])
        run = tr[(tr[keys] == e[keys]).all(axis=1) & ((tr["step"] - at).abs() <= TRACE_WINDOW)]
        if run.empty:
            continue
        folded = (
            run.groupby("step")
            .agg(
                loss=("loss", "first"),
                scale=("scale", "first"),
                skipped=("skipped", "first"),
                max_grad_zero=("grad_zero_share", "max"),
                min_exp_avg_sq_median=("exp_avg_sq_median", "min"),
                max_below_eps2=("exp_avg_sq_below_eps2_share", "max"),
                max_update_rms_ratio=("update_rms_ratio", "max"),
                max_update_abs=("update_max_abs", "max"),
            )
            .reset_index()
        )
        folded = percent(folded, ["max_grad_zero", "max_below_eps2"])
        out += [
            f"`{e['mode']}`, batch {int(e['batch_size'])}, seed {int(e['seed'])}: "
            f"{e['divergence']} at step {at}; traces from step {at - TRACE_WINDOW} to "
            f"{at + TRACE_WINDOW}, the parameters folded:",
            "",
            markdown(folded),
            "",
        ]
    return out


def _sparse_note(tr: pd.DataFrame) -> str:
    """What the traces figure leaves out of its folds, as a clause; empty where nothing."""
    sparse = sparse_parameters(tr)
    if not sparse:
        return ""
    return (
        f", leaving out {', '.join(sorted(sparse))}, whose fp32 gradient is mostly zero by "
        "construction (more than half its elements, on average)"
    )


def task_sentence(cfg: dict, runs: pd.DataFrame | None) -> str:
    """What the runs trained on, and a perfect model's held-out loss where known."""
    model = cfg.get("model", "mlp")
    # A workload whose sizes the record keeps (the MLP's, `NumericsConfig.record`), by name.
    classes = cfg.get("sizes", {}).get("classes")
    if "task" in cfg:
        what = f"Task ({model}, preset {cfg.get('preset')}): {cfg['task']}"
    else:  # a folder older than the record's task: the MLP's prototype task
        what = (
            f"Task: {classes} Gaussian classes in {cfg.get('sizes', {}).get('input')} "
            f"dimensions (each class a random prototype; a sample is prototype + "
            f"{cfg.get('noise')} × N(0, I), normalized to unit variance)"
        )
    what += f"; fresh batches every step, a held-out split of {cfg.get('heldout')} samples."
    if classes:
        what += f" Chance accuracy {1 / classes:.2%}."
    true = runs["true_heldout_loss"].dropna() if runs is not None and len(runs) else None
    if true is not None and len(true):
        what += (
            f" A perfect model's held-out loss (the task's own process on the split): "
            f"{true.mean():.4g}, mean over the runs' splits."
        )
    return what
