"""How a timing run was made, as its report says it: how many windows each case was timed in and
why no more, how GradScaler's skipped steps were kept out, and, last, the command, how long it
took, the machine (env.json) and the ceilings every floor is drawn against. Reads rows and
env.json only."""

from __future__ import annotations

import pandas as pd

from bench.cases import grid
from bench.measure import adaptive
from bench.store import paths
from bench.store.run_env import Ceilings, RunEnv
from bench.text import tables

ENV_KEYS = (
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
    "commit_source",
    "dirty",
    "tf32_matmul",
    "tf32_cudnn",
    "started",
    "ended",
)
"""The keys of env.json the environment table shows, in its order."""


def _ceilings_table(ceilings: Ceilings) -> str:
    rows = [(dtype, "TFLOP/s", v) for dtype, v in ceilings.matmul_tflops.items()]
    rows.append(("device copy (read + write)", "GB/s", ceilings.copy_gbps))
    rows += [
        (f"{name.replace('_', '-')} bus bandwidth", "GB/s", v)
        for name, v in ceilings.busbw_gbps.items()
    ]
    table = pd.DataFrame(rows, columns=["ceiling", "unit", "measured"])
    return tables.markdown(table)


def section(env: RunEnv) -> list[str]:
    """`## How this run was made`: the command, duration, machine and measured ceilings."""
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
    if env.get("step_options"):  # `bench.plan.plan.StepOptions`, in words
        out += [f"The timed step: {env['step_options']}.", ""]
    shown = pd.DataFrame([(k, env.get(k)) for k in ENV_KEYS if k in env], columns=["", "value"])
    out += ["### Environment", "", tables.markdown(shown), ""]
    if env.get("ceilings"):
        ceilings = Ceilings.from_record(env["ceilings"])
        out += [
            "### Measured ceilings",
            "",
            f"Matmul: {ceilings.ceiling_matmul_n:.0f}² GEMM of random data; copy: "
            f"{ceilings.ceiling_copy_mib:.0f} MiB device to device. Each row's floor "
            "is its matmul FLOPs over the ceiling of its matmul dtype plus Adam's bytes over "
            "the copy bandwidth (bench/measure/roofline.py).",
            "",
            _ceilings_table(ceilings),
            "",
        ]
    return out


def windows_line(df: pd.DataFrame) -> list[str]:
    """How many timed windows the cases have and why no more (`bench.measure.adaptive`)."""
    if "windows" not in df or "windows_stop" not in df:
        return []
    timed = df.dropna(subset=["windows"])
    if timed.empty:
        return []
    counts = timed.groupby(["windows", "windows_stop"]).size().sort_index()
    parts = [f"{n} after {int(w)} ({why})" for (w, why), n in counts.items()]
    return [
        "`windows`: timed windows of the case's steps. A case stops once its windows' medians "
        f"agree within {adaptive.MAX_SPREAD:.0%} and its steps are not noisy, from "
        f"{grid.DEFAULT_MIN_REPEATS} windows up to --repeats, or after {adaptive.MAX_TIMED_S:g} s "
        'of timed steps; `fixed`: the count --repeats asked for (docs/methodology.md, "When a '
        f'case stops"). Cases stopped: {", ".join(parts)}.',
        "",
    ]


def skipped_line(df: pd.DataFrame) -> list[str]:
    """What GradScaler's skipped steps did to the timing: the untimed steps run until the scale
    settled, and the timed steps skipped, left out of every statistic."""
    if "scale_warmup_steps" not in df or "skipped_steps" not in df:
        return []
    scaled = df[(df["status"] == "ok") & df["scale_loss"].fillna(False).astype(bool)]
    scaled = scaled.dropna(subset=["scale_warmup_steps", "skipped_steps"])
    if scaled.empty:
        return []
    warm = scaled["scale_warmup_steps"]
    low, high = int(warm.min()), int(warm.max())
    span = f"{low}" if low == high else f"{low}–{high}"
    skipped = scaled["skipped_steps"]
    counted = (
        f"{int(skipped.sum())} timed steps in {int((skipped > 0).sum())} of {len(scaled)} "
        "cases were skipped by GradScaler all the same and are left out of every statistic "
        "(`skipped_steps`)"
        if skipped.sum()
        else f"no timed step of the {len(scaled)} cases was a skipped one"
    )
    return [
        "GradScaler skips the optimizer's step after an overflow, so a skipped step is no "
        "training step. Each mode that scales the loss ran untimed steps until "
        f"{adaptive.SETTLE_QUIET} in a row applied their update (at most {adaptive.SETTLE_CAP}): "
        f"{span} steps here (`scale_warmup_steps`); {counted} "
        '(docs/methodology.md, "Steps GradScaler skipped").',
        "",
    ]
