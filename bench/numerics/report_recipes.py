"""The numerics report's section on the recipes beyond autocast (pure bf16, float8): their
step time, final loss, held-out accuracy and memory, the modes this machine could not run, and
how much of the pure-bf16 recipes' Adam update rounds away over training."""

from __future__ import annotations

from bench.numerics.answer_recipes import cast_modes
from bench.numerics.report_format import markdown, percent
from bench.recipes.catalog import beyond_autocast


def recipes_section(t: dict) -> list[str]:
    """The recipes beyond autocast: per batch size and mode, the step time, final loss, held-out
    accuracy and the memory of parameters, gradients and Adam's state; the update-underflow
    census of the pure-bf16 recipes over training; the modes this machine could not run."""
    s, tr = t["summary"], t["traces"]
    unsupported = t["audit_json"].get("unsupported", {})
    recipes = beyond_autocast()
    has_new = s["mode"].isin(recipes).any() or any(m in unsupported for m in recipes)
    if not has_new:
        return []
    out = [
        "## Recipes beyond autocast",
        "",
        "Pure bf16 (parameters, gradients and Adam's state in bf16; `-sr`: torchao's AdamW with "
        "stochastic rounding) and torchao's float8 training (float8 Linears inside bf16 "
        "autocast, float32 master weights). `params+grads+Adam GiB`: what the recipe's dtypes "
        "cost, activations aside. Means over seeds.",
        "",
    ]
    if not s.empty:
        cols = [c for c in ("step_ms", "final_loss", "heldout_acc", "model_state_gib") if c in s]
        table = s.groupby(["batch_size", "mode"], sort=False)[cols].mean().reset_index()
        table = table.rename(columns={"model_state_gib": "params+grads+Adam GiB"})
        out += [markdown(table), ""]
    if unsupported:
        out += ["Modes the audit could not run here:", ""]
        out += [f"- `{mode}`: {why}" for mode, why in unsupported.items()]
        out.append("")
    if not tr.empty and "update_underflow_share" in tr:
        pure = tr[tr["mode"].isin(cast_modes())].dropna(subset=["update_underflow_share"])
        if not pure.empty:
            steps = sorted(pure["step"].unique())
            shown = sorted({steps[0], steps[len(steps) // 2], steps[-1]})
            view = pure[pure["step"].isin(shown)]
            view = view.groupby(["mode", "batch_size", "step", "module"], sort=False)[
                ["update_underflow_share", "unchanged_share"]
            ].mean()
            out += [
                "### Update underflow",
                "",
                "Share of each parameter's elements whose Adam update (lr·m̂/(√v̂+eps), from "
                "the optimizer's state after the step) is smaller than half an ulp of the weight "
                "in its dtype, so that rounding to nearest leaves the weight unchanged, and the "
                "share the step actually left unchanged; at the first, middle and last traced "
                "step, mean over seeds (every traced step is in `convergence_traces.csv`).",
                "",
                markdown(
                    percent(view.reset_index(), ["update_underflow_share", "unchanged_share"])
                ),
                "",
            ]
    return out
