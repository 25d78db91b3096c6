"""The Answer on the modes beyond autocast: the fastest, whether each converges like fp32 seed by
seed, its census against the reference, its Adam updates that round away, its frozen parameters."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from bench.ground.catalog import beyond_autocast, card, headline, reference
from bench.numerics.analysis.runs import LOSS_GAP, versus
from bench.numerics.measure.tables import ACTIVATION_GRAD, PRODUCED_GRAD
from bench.numerics.render.markdown import block_key


def largest_parameter(census: pd.DataFrame, traces: pd.DataFrame) -> str | None:
    """The update-underflow sentence's parameter: the largest (census), else the first traced."""
    grads = census[census["kind"] == PRODUCED_GRAD] if len(census) else census
    if len(grads):
        return str(grads.loc[grads["numel"].idxmax(), "module"])
    return str(traces["module"].iloc[0]) if len(traces) else None


def cast_modes() -> tuple[str, ...]:
    """Modes beyond autocast with low-dtype parameters: no master weights, updates round away."""
    return tuple(m for m in beyond_autocast() if card(m).param_dtype is not None)


def mode_means(summary: pd.DataFrame) -> pd.DataFrame:
    """Per batch size and mode, the mean over seeds of the figures the mode section quotes."""
    cols = [c for c in ("step_ms", "final_loss", "heldout_acc", "model_state_gib") if c in summary]
    return summary.groupby(["batch_size", "mode"], sort=False)[cols].mean()


def beyond_sentences(summary: pd.DataFrame) -> list[str]:
    """The fastest mode per batch size against fp32, then each mode's convergence."""
    modes = beyond_autocast()
    if summary.empty or not set(modes) & set(summary["mode"]):
        return []
    ref_mode = reference()
    m = mode_means(summary)
    parts = []
    for bs in sorted(summary["batch_size"].unique()):
        g = m.loc[bs]
        if "step_ms" not in g or g["step_ms"].isna().all():
            continue
        best = g["step_ms"].idxmin()
        b = g.loc[best]
        text = f"at batch {int(bs)}, `{best}` ({b['step_ms']:.3g} ms per step"
        if ref_mode in g.index:
            f = g.loc[ref_mode]
            text += (
                f", {f['step_ms'] / b['step_ms']:.2f}× fp32; final loss {b['final_loss']:.3g} "
                f"against fp32's {f['final_loss']:.3g}, held-out accuracy "
                f"{b['heldout_acc']:.1%} against {f['heldout_acc']:.1%}"
            )
            saved = f.get("model_state_gib", float("nan")) - b.get("model_state_gib", float("nan"))
            if saved == saved:
                text += f"; it saves {saved:.3g} GiB of parameters, gradients and Adam state"
        parts.append(text + ")")
    out = []
    if parts:
        out.append(
            "**The shortest step in this study** (the eager step time each convergence run "
            "measured, mean over seeds, while the study's other runs shared the GPUs: no ranking, "
            "which the timing runs give; float8 is fast only compiled): "
            f"{'; '.join(parts)}."
        )
    verdicts = []
    for mode in modes:
        for bs in sorted(summary["batch_size"].unique()):
            if (bs, mode) not in m.index:
                continue
            vs = versus(summary, mode, bs, ref_mode)
            if vs is None:
                verdicts.append(f"`{mode}` at batch {int(bs)}: no fp32 run to compare with")
                continue
            verdicts.append(
                f"`{mode}` at batch {int(bs)} ends at {vs.loss:.3g} against fp32's "
                f"{vs.ref:.3g}: {vs.describe(ref_mode)}"
            )
    if verdicts:
        out.append(
            "**Do the modes beyond autocast converge?** On this synthetic task, one or two "
            f"seeds against a fixed {LOSS_GAP:.0%} gap: a description, not a verdict on training "
            f"like fp32 (docs/quality.md). {'; '.join(verdicts)}."
        )
    return out


SAME_RTOL = 0.02
"""A mode's census errors count as equal to the headline autocast mode's within 2%."""


def beyond_census_sentences(census: pd.DataFrame) -> list[str]:
    """Each mode's median gradient error against fp32, beside the headline mode's."""
    if census.empty:
        return []
    studied = [m for m in beyond_autocast() if m in set(census["mode"])]
    if not studied:
        return []
    beside = headline()
    kinds = census[census["kind"].isin([ACTIVATION_GRAD, PRODUCED_GRAD])]
    med = kinds.groupby(["batch_size", "mode", "step", "kind"])["rel_err"].median()

    def figures(bs: int, mode: str) -> str:
        steps = sorted(med.loc[(bs, mode)].index.get_level_values("step").unique())
        return ", ".join(
            f"step {int(st)}: {med.get((bs, mode, st, ACTIVATION_GRAD), math.nan):.3g} / "
            f"{med.get((bs, mode, st, PRODUCED_GRAD), math.nan):.3g}"
            for st in steps
        )

    parts = []
    for bs in sorted(kinds["batch_size"].unique()):
        modes = set(med.loc[bs].index.get_level_values("mode"))
        here = [m for m in studied if m in modes]
        for mode in here:
            text = f"`{mode}` at batch {int(bs)}: {figures(bs, mode)}"
            if beside in modes:
                a, b = med.loc[(bs, mode)], med.loc[(bs, beside)]
                # Equal up to the run-to-run noise of nondeterministic kernels (a float8 mode
                # that converted no Linear of the model is its autocast mode).
                same = a.index.equals(b.index) and np.allclose(a, b, rtol=SAME_RTOL)
                if same:
                    why = (
                        ", as when the mode converts no Linear of the model"
                        if card(mode).fp8_scaling
                        else ""
                    )
                    text += f" (equal to {beside}'s within {SAME_RTOL:.0%}{why})"
            parts.append(text)
        if here and beside in modes:
            parts.append(f"{beside} at batch {int(bs)}: {figures(bs, beside)}")
    if not parts:  # the modes' census rows hold no gradient
        return []
    return [
        "**The modes' gradients against fp32** (the census: each mode on the trajectory's "
        "weights at each checkpoint; the median relative error of the activation gradients / "
        f"of the weight and bias gradients as their matmuls produced them): {'; '.join(parts)}."
    ]


def update_underflow_sentences(traces: pd.DataFrame, census: pd.DataFrame) -> list[str]:
    """How much of the largest weight's Adam update rounds away in pure bf16 (the traces)."""
    if traces.empty or "update_underflow_share" not in traces:
        return []
    largest = largest_parameter(census, traces)
    tr = traces[traces["mode"].isin(cast_modes()) & (traces["module"] == largest)].dropna(
        subset=["update_underflow_share"]
    )
    if tr.empty:
        return []
    parts = []
    for (mode, bs), g in tr.groupby(["mode", "batch_size"], sort=False):
        last = g[g["step"] == g["step"].max()]
        parts.append(
            f"`{mode}` at batch {int(bs)}: {g['update_underflow_share'].mean():.1%} of "
            f"{largest}'s elements on average over the traced steps "
            f"({last['update_underflow_share'].mean():.1%} at step {int(g['step'].max())}), "
            f"and the step left {g['unchanged_share'].mean():.1%} unchanged"
        )
    return [
        "**Update underflow** (Adam's update smaller than half a bf16 ulp of its weight, so "
        f"rounding to nearest drops it): {'; '.join(parts)}. With stochastic rounding an update "
        "that small still moves its weight with a probability proportional to its size, so the "
        "unchanged share falls below the underflow share." + _frozen(traces)
    ]


FROZEN = 0.99
"""Frozen: its steps left at least 99% of its elements unchanged, over the traced steps."""


def _frozen(traces: pd.DataFrame) -> str:
    """The parameters the pure-bf16 modes left frozen, as a sentence; empty if none."""
    tr = traces[traces["mode"].isin(cast_modes())].dropna(subset=["unchanged_share"])
    if tr.empty:
        return ""
    tr = tr.assign(module=tr["module"].map(block_key))
    share = tr.groupby(["mode", "batch_size", "module"], sort=False)["unchanged_share"].mean()
    parts = []
    for (mode, bs), g in share.groupby(level=["mode", "batch_size"], sort=False):
        frozen = g[g >= FROZEN].index.get_level_values("module")
        if len(frozen):
            parts.append(f"`{mode}` at batch {int(bs)}: {', '.join(frozen)}")
    if not parts:
        return ""
    return (
        f" Parameters whose steps left at least {FROZEN:.0%} of their elements unchanged, on "
        f"average over the traced steps (frozen, in effect): {'; '.join(parts)}."
    )
