"""Rendering a run: its DataFrame and env.json into report.md and its figures. Pure: nothing here
measures.

Tables are `bench.publish.tables.markdown` (tabulate, at most 4 significant digits); figures are
`bench.publish.plots`, written next to report.md by `write` and embedded in it. Every figure comes
from
the run's rows or env.json.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from bench.publish import findings, plots, tables
from bench.store import paths, results

TIME_COLUMNS = {
    "status": "status",
    "fwd_ms": "fwd ms",
    "bwd_ms": "bwd ms",
    "step_ms": "optim ms",
    "total_ms": "total ms",
    "total_ms_iqr": "IQR ms",
    "samples_per_s": "samples/s",
    "tflops": "TFLOP/s",
    "pct_of_floor": "% of floor",
    "peak_alloc_gib": "peak GiB",
    "speedup_vs_fp32": "× fp32",
    "speedup_vs_tf32": "× tf32",
    "noisy": "noisy",
}
FLOOR_COLUMNS = {
    "matmul_dtype": "matmul",
    "fwd_ms": "fwd ms",
    "fwd_floor_ms": "fwd floor",
    "fwd_pct_of_floor": "fwd %",
    "bwd_ms": "bwd ms",
    "bwd_floor_ms": "bwd floor",
    "bwd_pct_of_floor": "bwd %",
    "step_ms": "optim ms",
    "step_floor_ms": "optim floor",
    "step_pct_of_floor": "optim %",
    "total_ms": "total ms",
    "floor_ms": "floor ms",
    "pct_of_floor": "total %",
    "fwd_share": "fwd share",
    "bwd_share": "bwd share",
    "step_share": "optim share",
    "cast_gbytes": "cast GB",
    "cast_ms_at_copy_bw": "cast ms",
}
MEMORY_COLUMNS = {
    "param_gib": "params",
    "grad_gib": "grads",
    "optim_state_gib": "Adam state",
    "act_gib": "saved by fwd",
    "model_state_gib": "params+grads+Adam",
    "model_state_saved_vs_fp32": "saved vs fp32",
    "peak_vs_bf16_amp": "peak ÷ bf16-amp",
    "peak_fwd_gib": "peak fwd",
    "peak_bwd_gib": "peak bwd",
    "peak_opt_gib": "peak optim",
    "peak_alloc_gib": "peak alloc",
    "peak_reserved_gib": "peak reserved",
}
DTYPE_COLUMNS = {
    "mode": "mode",
    "autocast_dtype": "autocast",
    "scale_loss": "GradScaler",
    "tf32_matmul": "TF32 matmul",
    "tf32_cudnn": "TF32 cuDNN",
    "output_dtype": "logits",
    "loss_dtype": "loss",
    "param_grad_dtype": "fc1.weight.grad",
    "param_dtype": "params",
    "optimizer_impl": "Adam",
    "fp8_linears": "float8 Linears (torchao's size rules)",
}
RANK_COLUMNS = {
    "status": "status",
    "global_batch_size": "global batch",
    "total_ms": "step ms",
    "samples_per_s": "samples/s",
    "samples_per_s_per_gpu": "per GPU",
    "scaling_efficiency": "scaling",
    "comm_ms": "comm ms",
    "comm_floor_ms": "comm floor ms",
    "pct_of_floor": "% of floor",
    "rank_spread_pct": "rank spread %",
    "peak_alloc_gib": "peak GiB",
    "peak_alloc_gib_spread": "peak spread GiB",
}
"""The columns of a run of several ranks, per case (`## Several GPUs`)."""
HEADLINE_COLUMNS = {
    "mode": "mode",
    "total_ms": "step ms",
    "samples_per_s": "samples/s",
    "tflops": "TFLOP/s",
    "pct_of_floor": "% of floor",
    "peak_alloc_gib": "peak GiB",
    "speedup_vs_fp32": "× fp32",
    "param_grad_dtype": "param.grad",
}


def _table(df: pd.DataFrame, columns: dict[str, str]) -> str:
    """The given columns of `df`, renamed, as a readable markdown table (`bench.publish.tables`). A
    cell
    the row did not measure is `–`; the section's text or the notes say why."""
    present = {k: v for k, v in columns.items() if k in df.columns}
    shown = df[list(present)].rename(columns=present)
    if df.attrs.get("cpu"):  # no allocator peaks on the CPU: the report says so once
        for key in PEAK_COLUMNS:
            if key in present:
                shown[present[key]] = math.nan
    if "comm_ms" in present:
        # Older rows kept a negative difference of two medians: communication all hidden.
        comm = shown[present["comm_ms"]]
        shown[present["comm_ms"]] = comm.astype(object).where(~(comm < 0), "< noise")
    return tables.markdown(shown)


PHASE_PREFIXES = ("fwd_", "bwd_", "step_", "peak_fwd", "peak_bwd", "peak_opt")
PEAK_COLUMNS = (
    "peak_vs_bf16_amp",
    "peak_alloc_gib",
    "peak_reserved_gib",
    "peak_fwd_gib",
    "peak_bwd_gib",
    "peak_opt_gib",
)


def shown_axes(df: pd.DataFrame, *, grouped_by: str = "batch_size") -> dict[str, str]:
    """The axes a table of this run shows: `mode`, and every other axis that takes more than one
    value in the run (derived from the case's fields, so a new axis appears by itself)."""
    names = [a for a in results.axes() if a != grouped_by and (a == "mode" or df[a].nunique() > 1)]
    return {a: a for a in names}


def _env_table(env: dict) -> str:
    keys = [
        "gpu",
        "gpu_memory_gib",
        "driver",
        "cuda",
        "cudnn",
        "torch",
        "python",
        "cpu",
        "platform",
        "commit",
        "dirty",
        "tf32_matmul",
        "tf32_cudnn",
        "started",
        "ended",
    ]
    items = [(k, env.get(k)) for k in keys if k in env]
    return tables.markdown(pd.DataFrame(items, columns=["", "value"]))


def _ceilings_table(ceilings: dict) -> str:
    rows = [
        (k.removeprefix("matmul_tflops_"), "TFLOP/s", v)
        for k, v in ceilings.items()
        if k.startswith("matmul_tflops_")
    ]
    rows.append(("device copy (read + write)", "GB/s", ceilings["copy_gbps"]))
    rows += [
        (f"{k.removesuffix('_busbw_gbps').replace('_', '-')} bus bandwidth", "GB/s", v)
        for k, v in ceilings.items()
        if k.endswith("_busbw_gbps")
    ]
    table = pd.DataFrame(rows, columns=["ceiling", "unit", "measured"])
    return tables.markdown(table)


def headline_optimizer(df: pd.DataFrame) -> str:
    """The optimizer a run's headline shows: fused Adam where the run has it (the faster one),
    else its first."""
    optimizers = list(dict.fromkeys(df["optimizer"])) if "optimizer" in df else []
    return "fused" if "fused" in optimizers or not optimizers else str(optimizers[0])


def headline(df: pd.DataFrame, batch_size: int | None = None, optimizer: str | None = None) -> str:
    """The README's table: every mode, eager, at the largest batch size where the headline
    optimizer has an eager case that passed (a larger batch may hold only the other optimizer's,
    when a killed run's last row was cut off)."""
    optimizer = optimizer or headline_optimizer(df)
    ok = df[
        (df["status"] == "ok")
        & (df["optimizer"] == optimizer)
        & (df["variant"] == "eager")
        & (df["parallel"] == "none")
    ]
    if ok.empty:
        return "(no successful cases)"
    bs = batch_size or int(ok["batch_size"].max())
    sel = df[
        (df["batch_size"] == bs)
        & (df["optimizer"] == optimizer)
        & (df["variant"] == "eager")
        & (df["parallel"] == "none")
    ]
    shown = sel[sel["status"] == "ok"]
    out = f"Batch size {bs}, {optimizer} Adam, eager:\n\n" + _table(shown, HEADLINE_COLUMNS)
    others = sel[sel["status"] != "ok"]
    if len(others):
        # Not dropped: named, with their status; the report's last section says why.
        named = ", ".join(
            f"{m} ({st})" for m, st in zip(others["mode"], others["status"], strict=True)
        )
        out += f"\n\nNot in the table: {named} (see the cases that did not pass)."
    return out


def _best_variants(df: pd.DataFrame) -> pd.DataFrame:
    """Per mode, optimizer and batch size: eager's time, the fastest variant and its time."""
    ok = findings.contenders(df)
    keys = [a for a in results.axes() if a != "variant"]
    rows = []
    for key, g in ok.groupby(keys, sort=False):
        eager = g[g["variant"] == "eager"]
        best = g.loc[g["total_ms"].idxmin()]
        rows.append(
            {
                **dict(zip(keys, key, strict=True)),
                "eager_ms": eager["total_ms"].iloc[0] if len(eager) else float("nan"),
                "best_variant": best["variant"],
                "best_ms": best["total_ms"],
                "best_pct_of_floor": best["pct_of_floor"],
            }
        )
    out = pd.DataFrame(rows)
    if not out.empty:
        out["best_vs_eager"] = out["eager_ms"] / out["best_ms"]
    return out


def best_variant_table(df: pd.DataFrame, optimizer: str = "fused") -> str:
    """Per mode (rows) and batch size (columns): the fastest variant, eager's time over its time,
    and both times, with the given optimizer."""
    best = _best_variants(df)
    best = best[best["optimizer"] == optimizer]
    if best.empty:
        return f"(no successful cases with {optimizer} Adam)"
    table = {
        mode: {
            f"batch {r.batch_size}": f"{r.best_variant}, {r.best_vs_eager:.3f}× "
            f"({r.eager_ms:.3g} → {r.best_ms:.3g} ms)"
            for r in g.itertuples()
        }
        for mode, g in best.groupby("mode", sort=False)
    }
    wide = pd.DataFrame.from_dict(table, orient="index")
    return f"{optimizer} Adam; fastest variant, × eager (eager ms → its ms):\n\n" + (
        tables.markdown(wide.rename_axis("mode").reset_index())
    )


def fastest_recipe_table(df: pd.DataFrame, optimizer: str = "fused") -> str:
    """Per batch size (rows): the fastest mode and variant, its step time, how many times faster it
    is than bf16-amp's fastest variant, eager bf16-amp and eager fp32, its peak memory over
    bf16-amp's (the same variant), and the runner-up (another mode) with its time."""
    ok = findings.contenders(df)
    ok = ok[ok["optimizer"] == optimizer]
    if "parallel" in ok:
        ok = ok[ok["parallel"] == "none"]
    if ok.empty:
        return f"(no successful cases with {optimizer} Adam)"
    rows = []
    for bs, g in ok.groupby("batch_size"):
        ranked = g.sort_values("total_ms")
        best = ranked.iloc[0]
        second = ranked[ranked["mode"] != best["mode"]].head(1)
        amp = g[g["mode"] == "bf16-amp"]
        amp_eager = amp[amp["variant"] == "eager"]["total_ms"]
        fp32 = g[(g["mode"] == "fp32") & (g["variant"] == "eager")]["total_ms"]
        amp_same = amp[amp["variant"] == best["variant"]]["peak_alloc_gib"]
        nan = float("nan")
        rows.append(
            {
                "batch": int(bs),
                "fastest": f"{best['mode']} ({best['variant']})",
                "ms": best["total_ms"],
                "× best bf16-amp": amp["total_ms"].min() / best["total_ms"] if len(amp) else nan,
                "× eager bf16-amp": (
                    amp_eager.iloc[0] / best["total_ms"] if len(amp_eager) else nan
                ),
                "× eager fp32": fp32.iloc[0] / best["total_ms"] if len(fp32) else nan,
                "peak / bf16-amp's": (
                    best["peak_alloc_gib"] / amp_same.iloc[0] if len(amp_same) else nan
                ),
                "runner-up": (
                    f"{second['mode'].iloc[0]} ({second['variant'].iloc[0]}), "
                    f"{second['total_ms'].iloc[0]:.3g} ms"
                    if len(second)
                    else ""
                ),
            }
        )
    return f"{optimizer} Adam; the fastest recipe and variant per batch size:\n\n" + pd.DataFrame(
        rows
    ).pipe(tables.markdown)


def _variants_section(df: pd.DataFrame) -> list[str]:
    """Each variant's step time against eager's, per mode, optimizer and batch size, and the
    price paid before timing (compilation or capture)."""
    if set(df["variant"]) <= {"eager"}:
        return []
    ok = df[df["status"] == "ok"]
    out = [
        "## Execution variants",
        "",
        "Median step time (ms) of each variant; `best` is the fastest, `× eager` eager's time "
        "over the best's. `prepare s`: host seconds spent compiling or capturing before the "
        "timed window (never inside it).",
        "",
    ]
    for bs, group in ok.groupby("batch_size", sort=True):
        wide = group.pivot_table(
            index=["mode", "optimizer"], columns="variant", values="total_ms", sort=False
        )
        best = _best_variants(group).set_index(["mode", "optimizer"])
        wide["best"] = best["best_variant"]
        wide["× eager"] = best["best_vs_eager"]
        out += [
            f"### Batch size {bs}",
            "",
            tables.markdown(wide.reset_index()),
            "",
        ]
    if "prepare_s" not in ok or ok.empty:
        return out
    prep = ok.pivot_table(
        index=["mode", "optimizer", "batch_size"], columns="variant", values="prepare_s", sort=False
    )
    out += [
        "### Preparation (s)",
        "",
        tables.markdown(prep.reset_index()),
        "",
    ]
    notes = df[df.get("eager_parts", pd.Series("", index=df.index)).fillna("").astype(bool)]
    if not notes.empty:
        out += ["Parts of the step that ran outside the graph:", ""]
        out += [f"- `{r.case_id}`: {r.eager_parts}" for r in notes.itertuples()]
        out.append("")
    if "recompiled" in df:
        again = df[df["recompiled"].fillna(False).astype(bool)]
        out += [
            f"Cases that compiled again during the timed window: {len(again)}"
            + (": " + ", ".join(f"`{c}`" for c in again["case_id"]) if len(again) else "."),
            "",
        ]
    return out


def _ranks_section(df: pd.DataFrame, env: dict) -> list[str]:
    """A run of several ranks: scaling efficiency per mode and parallelism, what the gradient
    collectives cost against their floor, and what bfloat16 reduction saves against float32."""
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
            _table(group, {**shown_axes(group), **RANK_COLUMNS}),
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


def _above_floor(df: pd.DataFrame) -> list[str]:
    """A sentence for rows above 100% of floor: the floor is built from ceilings measured on one
    GEMM size, and a step whose own matmuls run faster than that GEMM beats it."""
    if "pct_of_floor" not in df:
        return []
    above = df[(df["status"] == "ok") & (df["pct_of_floor"] > 100)]
    if above.empty:
        return []
    worst = above.loc[above["pct_of_floor"].idxmax()]
    return [
        f"{len(above)} row(s) run faster than their floor (up to {worst['pct_of_floor']:.1f}%, "
        f"`{worst['case_id']}`): the ceilings are measured on one GEMM size (see Measured "
        "ceilings), and these steps' own matmuls ran faster than it did, so for them the floor "
        "is that much too high.",
        "",
    ]


def _status_lines(df: pd.DataFrame, env: dict) -> list[str]:
    """The first lines of a report: how many cases passed, and whether the run finished."""
    expected = env.get("expected_cases")
    counts = df["status"].value_counts()
    ok = int(counts.get("ok", 0))
    parts = ", ".join(f"{n} {status}" for status, n in counts.items()) or "no rows"
    lines = [f"**Cases: {ok} of {expected if expected else len(df)} ok** ({parts})."]
    if expected and len(df) < expected:
        lines.append(
            f"**This run stopped early**: {expected - len(df)} of {expected} cases have no row "
            "(resume it with `./run_bench.sh --resume` and this folder)."
        )
    elif "ended" not in env:
        lines.append("**This run did not finish** (no end time in env.json).")
    if ok == 0:
        lines.append("**No case passed**: every figure below is missing; see the failures.")
    return [*lines, ""]


def _figure(figures: dict[str, str], name: str, alt: str) -> list[str]:
    """The markdown that embeds one figure, if it was drawn."""
    return [f"![{alt}]({figures[name]})", ""] if name in figures else []


def _method(env: dict) -> list[str]:
    """How the run was made: the command, the machine, the measured ceilings, the duration."""
    out = [
        "## How this run was made",
        "",
        "```",
        paths.shown_command(env.get("command", "")),
        "```",
        "",
    ]
    if env.get("started") and env.get("ended"):
        minutes = (pd.Timestamp(env["ended"]) - pd.Timestamp(env["started"])).total_seconds() / 60
        resumed = (
            " (resumed: its sessions and the pauses between them)" if env.get("resumed") else ""
        )
        out += [f"The run took {tables.cell(minutes)} minutes from start to end{resumed}.", ""]
    out += ["### Environment", "", _env_table(env), ""]
    if env.get("ceilings"):
        out += [
            "### Measured ceilings",
            "",
            f"Matmul: {env['ceilings']['ceiling_matmul_n']:.0f}² GEMM of random data; copy: "
            f"{env['ceilings']['ceiling_copy_mib']:.0f} MiB device to device. Each row's floor "
            "is its matmul FLOPs over the ceiling of its matmul dtype plus Adam's bytes over "
            "the copy bandwidth (bench/measure/roofline.py).",
            "",
            _ceilings_table(env["ceilings"]),
            "",
        ]
    return out


def left_out(modes: dict[str, str]) -> str:
    """Modes left out of a grid, grouped by why: `fp8-tensorwise, fp8-rowwise: float8 matmuls
    need a CUDA GPU ...; bf16-pure-sr: needs torchao ...`."""
    reasons = dict.fromkeys(modes.values())
    return "; ".join(
        f"{', '.join(m for m, r in modes.items() if r == reason)}: {reason}" for reason in reasons
    )


def _cpu_note(left: dict[str, str]) -> str:
    """What a CPU run does not measure, said once (its cells are `–`), and what its default
    grid left out."""
    note = (
        "**CPU smoke run**: these figures exercise the harness on the CPU; they say nothing "
        "about GPU training speed. Not measured on the CPU, so `–`: peak memory (it comes from "
        "the CUDA allocator's counters), and the matmul floors and `% of floor` (a CPU's "
        "matmul rate bounds nothing: bench/measure/ceilings.py); the optimizer's floor is measured."
    )
    if left:
        note += f" Left out of the default grid, as they cannot run here: {left_out(left)}."
    return note


def render(df: pd.DataFrame, env: dict, figures: dict[str, str] | None = None) -> str:
    """The whole report.md of a run; `figures` ({figure: file name}, from `plots.write_all`)
    are embedded in their sections. It opens with what the run found (the lines and the
    headline table), then the detail, then how the run was made."""
    figures = figures or {}
    out = [f"# ampbench run `{env.get('run_name', '')}`", ""]
    out += _status_lines(df, env)
    df = df.copy()
    df.attrs["cpu"] = env.get("device") == "cpu"
    lead = shown_axes(df)
    if env.get("device") == "cpu":
        out += [_cpu_note(env.get("config", {}).get("left_out") or {}), ""]
    optimizer = headline_optimizer(df)
    found = findings.findings(df, optimizer)
    if found:
        out += ["## What this run found", "", *found, ""]
        out += [headline(df, optimizer=optimizer), ""]
        out += _figure(figures, "throughput", "throughput per mode and batch size")
    if env.get("config", {}).get("numerics"):
        out += [
            "This run began with a short numerics study, in this process and before the timed "
            "cases: [numerics/report.md](numerics/report.md) (dtype audit, underflow census, "
            "200 convergence steps, the Answer).",
            "",
        ]
    out += [
        "## Time per step",
        "",
        "Medians over the timed steps, in ms. `optim` is the optimizer phase (GradScaler "
        "unscale/step/update, Adam, zero_grad). Speedups are the base mode's total time over "
        "this row's (above 1 is faster). `noisy`: IQR above 5% of the median.",
        "",
    ]
    for bs, group in df.groupby("batch_size", sort=True):
        out += [f"### Batch size {bs}", "", _table(group, {**lead, **TIME_COLUMNS}), ""]
    out += _ranks_section(df, env)
    out += _variants_section(df)
    out += [
        "## Where the time goes: each phase against its floor",
        "",
        "Forward and backward are bound by the matmul ceiling of the `matmul` dtype, the "
        "optimizer phase by the copy bandwidth (Adam's bytes). `share`: the phase's part of the "
        "step. `cast GB`: the bytes autocast's float32↔low-precision casts of weights, "
        "gradients and input move each step, which the floor does not count, and `cast ms` "
        "their time at the measured copy bandwidth: part of the distance to the floor. `–`: "
        "not measured (a variant that fuses the phases times only the whole step).",
        "",
    ]
    out += _above_floor(df)
    for bs, group in df.groupby("batch_size", sort=True):
        out += [f"### Batch size {bs}", "", _table(group, {**lead, **FLOOR_COLUMNS}), ""]
    out += _figure(figures, "phases", "time per phase against the floor")
    out += _figure(figures, "floor", "share of floor per mode and batch size")
    out += [
        "## Memory (GiB)",
        "",
        "`saved by fwd`: what the forward pass leaves allocated for backward (activations, "
        "and under autocast the low-precision weight copies).",
        "",
    ]
    for bs, group in df.groupby("batch_size", sort=True):
        out += [f"### Batch size {bs}", "", _table(group, {**lead, **MEMORY_COLUMNS}), ""]
    out += _figure(figures, "memory", "memory per mode")
    dtypes = df.drop_duplicates("mode")
    out += [
        "## Dtypes observed",
        "",
        "As the step produced them, per mode. `float8 Linears`: which Linears a float8 recipe "
        "converted to torchao's Float8Linear, and why the others were kept (torchao's "
        "auto-filter: dims divisible by 16, and sizes below which float8 was slower on H100).",
        "",
        _table(dtypes, DTYPE_COLUMNS),
        "",
    ]
    out += findings.overhead_section(df, env)
    out += _method(env)
    bad = df[df["status"] != "ok"]
    if not bad.empty:
        out += [
            "## Cases that did not pass",
            "",
            tables.markdown(bad[["case_id", "status", "error"]]),
            "",
        ]
    # A passing row's error is a note on what it could not measure (a recompile, its peaks).
    errors = df.get("error", pd.Series("", index=df.index)).fillna("").astype(str)
    noted = df[(df["status"] == "ok") & (errors != "")]
    if not noted.empty:
        out += ["## Notes on cases that passed", ""]
        out += [f"- `{r.case_id}`: {r.error}" for r in noted.itertuples()]
        out.append("")
    return "\n".join(out)


def write(run_dir: Path) -> pd.DataFrame:
    """(Re)write results.csv, the figures and report.md of a run from its rows and env.json."""
    df = results.load(run_dir)
    env = results.read_env(run_dir)
    df.to_csv(run_dir / results.CSV, index=False)
    figures = plots.write_all(df, run_dir)
    (run_dir / results.REPORT).write_text(render(df, env, figures))
    return df
