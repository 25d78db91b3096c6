"""The report's section on the modes beyond autocast: time, loss, memory, update underflow."""

from __future__ import annotations

import pandas as pd

from bench.ground.catalog import beyond_autocast
from bench.numerics.render.markdown import block_key, percent, table_file, times
from bench.numerics.render.sentences.beyond import cast_modes, mode_means
from bench.text.tables import markdown


def beyond_section(t: dict) -> list[str]:
    """The modes beyond autocast: time, losses, memory, update underflow, unsupported."""
    s, tr = t["summary"], t["traces"]
    unsupported = t["audit_json"].get("unsupported", {})
    modes = beyond_autocast()
    has_new = s["mode"].isin(modes).any() or any(m in unsupported for m in modes)
    if not has_new:
        return []
    out = [
        "## Modes beyond autocast",
        "",
        "Pure bf16 (parameters, gradients and Adam's state in bf16; `-sr`: torchao's AdamW with "
        "stochastic rounding) and torchao's float8 training (float8 Linears inside bf16 "
        "autocast, float32 master weights). `params+grads+Adam GiB`: what the mode's dtypes "
        "cost, activations aside. Means over seeds.",
        "",
    ]
    if not s.empty:
        table = mode_means(s).reset_index()
        table = table.rename(columns={"model_state_gib": "params+grads+Adam GiB"})
        out += [markdown(table), ""]
    if unsupported:
        out += ["Modes the audit could not run here:", ""]
        out += [f"- `{mode}`: {why}" for mode, why in unsupported.items()]
        out.append("")
    if not tr.empty and "update_underflow_share" in tr:
        pure = tr[tr["mode"].isin(cast_modes())].dropna(subset=["update_underflow_share"])
        if not pure.empty:
            table = update_underflow_table(pure)
            folded = table["module"].str.contains(" ×").any()
            blocks = (
                ", and over the blocks where a parameter repeats (`blocks.*`)" if folded else ""
            )
            out += [
                "### Update underflow",
                "",
                "Share of each parameter's elements whose Adam update (lr·m̂/(√v̂+eps), from "
                "the optimizer's state after the step) is smaller than half an ulp of the weight "
                "in its dtype, so that rounding to nearest leaves the weight unchanged, at the "
                "first, middle and last traced step, and the share the last step actually left "
                f"unchanged; mean over seeds{blocks} (every traced step of every parameter is in "
                f"`{table_file(t, 'traces')}`).",
                "",
                markdown(table),
                "",
            ]
    return out


def update_underflow_table(pure: pd.DataFrame) -> pd.DataFrame:
    """The pure-bf16 update underflow per mode, batch and parameter at three traced steps."""
    steps = sorted(pure["step"].unique())
    shown = sorted({steps[0], steps[len(steps) // 2], steps[-1]})
    keys = ["mode", "batch_size", "step", "module"]
    cols = ["update_underflow_share", "unchanged_share"]
    seeds = pure[pure["step"].isin(shown)].groupby(keys, sort=False)[cols].mean().reset_index()
    seeds["module"] = seeds["module"].map(block_key)
    grouped = seeds.groupby(keys, sort=False)
    folded = grouped[cols].mean().assign(blocks=grouped.size()).reset_index()
    folded["module"] = times(folded["module"], folded["blocks"])
    rows = ["mode", "batch_size", "module"]
    wide = folded.pivot_table(
        index=rows, columns="step", values="update_underflow_share", sort=False
    )
    wide.columns = [f"underflow at step {int(st)}" for st in wide.columns]
    last = folded[folded["step"] == shown[-1]].set_index(rows)["unchanged_share"]
    wide[f"unchanged at step {int(shown[-1])}"] = last
    wide = wide.reset_index()
    return percent(wide, [c for c in wide.columns if c not in rows])
