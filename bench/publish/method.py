"""How a timing run was made, as its report's last section says it: the command, how long it
took, the machine (env.json) and the ceilings it measured, against which every floor is drawn.
Pure: reads env.json.
"""

from __future__ import annotations

import pandas as pd

from bench.publish import tables
from bench.store import paths

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
    "dirty",
    "tf32_matmul",
    "tf32_cudnn",
    "started",
    "ended",
)
"""The keys of env.json the environment table shows, in its order."""


def _env_table(env: dict) -> str:
    items = [(k, env.get(k)) for k in ENV_KEYS if k in env]
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


def section(env: dict) -> list[str]:
    """`## How this run was made`: the command, the duration, the machine, the measured
    ceilings."""
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
    if env.get("step_options"):  # `bench.recipes.step.StepOptions`, in words
        out += [f"The timed step: {env['step_options']}.", ""]
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
