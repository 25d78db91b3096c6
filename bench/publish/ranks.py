"""A run of several ranks: the report's `## Several GPUs` section (`section`), the scaling
efficiency per mode and parallelism that a README `scaling` block quotes too (`scaling_table`),
and what reducing gradients in bfloat16 saves against float32. Pure: reads a run's rows.
"""

from __future__ import annotations

import pandas as pd

from bench.publish import columns
from bench.store import results
from bench.text import tables


def section(df: pd.DataFrame) -> list[str]:
    """Scaling efficiency per mode and parallelism, what the gradient collectives cost against
    their floor, and what bfloat16 reduction saves against float32; nothing for one rank."""
    if df.empty or not df["world_size"].max() > 1:
        return []
    ok = df[df["status"] == "ok"]
    n = int(df["world_size"].max())
    out = [
        "## Several GPUs",
        "",
        f"{n} ranks ({', '.join(sorted(set(df['host'].dropna().astype(str))))}). Each rank keeps "
        "the case's batch size (weak scaling); `parallel=none` is the one-GPU baseline, each "
        "rank training its own copy at once. A row's time is its slowest rank's median. "
        "`scaling`: samples/s per GPU over the baseline's. `comm ms`: forward plus backward "
        "with gradient synchronization less without it (DDP `no_sync()`; FSDP2 "
        "`set_requires_gradient_sync(False)`, which stops the reduce-scatter but not the "
        "parameter all-gathers), the communication the step did not hide. `comm floor ms`: the "
        "bytes of all the step's collectives over the bus bandwidth measured in this run, added "
        "to the row's floor. The two measure different things: the floor is every collective, "
        "hidden or not, while `comm ms` is only what the step waited for (for FSDP2 the "
        "reduce-scatter alone); a `comm ms` below the floor means the step hid the rest. "
        "FSDP2 without synchronization also accumulates unsharded gradients in backward, work "
        "the synchronized step does not do, so its `comm ms` is low by that much.",
        "",
    ]
    dist = ok[ok["parallel"] != "none"]
    for (opt, variant), group in dist.groupby(["optimizer", "variant"]):
        out += [
            f"### Scaling efficiency (%), {opt} Adam, {variant}",
            "",
            scaling_table(group, opt),
            "",
        ]
    for bs, group in df.groupby("batch_size", sort=True):
        out += [
            f"### Per case, batch {bs} per GPU",
            "",
            columns.table(group, {**columns.shown_axes(group), **columns.RANK}),
            "",
        ]
    saving = _bf16_reduction(ok)
    if not saving.empty:
        out += [
            "### What bfloat16 reduction saves",
            "",
            "Step and comm ms with gradients reduced in float32 (`ddp`, `fsdp`) against bfloat16 "
            "(`ddp-bf16`, `fsdp-bf16`); `saved ms`: the float32 step less the bfloat16 one.",
            "",
            tables.markdown(saving),
            "",
        ]
    return out


def scaling_table(df: pd.DataFrame, optimizer: str = "fused") -> str:
    """Scaling efficiency in percent per mode and parallelism (rows), one column per GPU count
    and batch size per GPU, so that the runs of several GPU counts sit side by side."""
    sel = df[
        (df["status"] == "ok")
        & (df["parallel"] != "none")
        & (df["optimizer"] == optimizer)
        & df["scaling_efficiency"].notna()
    ]
    if sel.empty:
        passed = df[(df["status"] == "ok") & (df["parallel"] != "none")]
        if (passed["optimizer"] == optimizer).any():
            return (
                "(no scaling efficiency: it is measured against a `parallel=none` case of the "
                "same mode and batch size, and none passed in this run; add `none` to "
                "`--parallel`)"
            )
        return f"(no passing distributed row with {optimizer} Adam)"
    if sel["variant"].nunique() > 1:
        raise ValueError("one variant per scaling table: " + ", ".join(sel["variant"].unique()))
    cell = ["mode", "parallel", "world_size", "batch_size"]
    if sel.duplicated(cell).any():
        twice = sel[sel.duplicated(cell)].iloc[0]
        raise ValueError(
            f"two rows for {twice['mode']}/{twice['parallel']} on {twice['world_size']} GPUs "
            f"at batch {twice['batch_size']}: one run per GPU count"
        )
    # Modes and parallelisms in the order the runs have them (the grid's), columns by GPU count.
    sel = sel.sort_values(["world_size", "batch_size"], kind="stable")
    sel = sel.assign(
        _col=sel["world_size"].astype(int).astype(str)
        + " GPUs, batch "
        + sel["batch_size"].astype(int).astype(str)
    )
    wide = sel.pivot_table(
        index=["mode", "parallel"], columns="_col", values="scaling_efficiency", sort=False
    )
    rows = pd.MultiIndex.from_product([sel["mode"].unique(), sel["parallel"].unique()])
    wide = wide.reindex([r for r in rows if r in wide.index])
    wide.columns.name = None
    return tables.markdown((wide * 100).reset_index())


def _bf16_reduction(ok: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for full, half in (("ddp", "ddp-bf16"), ("fsdp", "fsdp-bf16")):
        keys = [a for a in results.axes() if a != "parallel"]
        a = ok[ok["parallel"] == full].set_index(keys)
        b = ok[ok["parallel"] == half].set_index(keys)
        for key in a.index.intersection(b.index):
            ra, rb = a.loc[key], b.loc[key]
            named = dict(zip(keys, key, strict=True))
            rows.append(
                {
                    "mode": named["mode"],
                    "batch": named["batch_size"],
                    "optimizer": named["optimizer"],
                    "parallel": f"{full} → {half}",
                    "fp32 step ms": ra["total_ms"],
                    "bf16 step ms": rb["total_ms"],
                    "saved ms": ra["total_ms"] - rb["total_ms"],
                    "fp32 comm ms": ra.get("comm_ms"),
                    "bf16 comm ms": rb.get("comm_ms"),
                    "fp32 comm floor": ra.get("comm_floor_ms"),
                    "bf16 comm floor": rb.get("comm_floor_ms"),
                }
            )
    return pd.DataFrame(rows)
