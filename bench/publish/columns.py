"""The columns a timing run's tables show: one catalog per table (column -> header), the axes a
table leads with, and `table`, which renders a catalog's columns of some rows."""

from __future__ import annotations

import math

import pandas as pd

from bench.ground import catalog
from bench.store import results
from bench.text import tables

SPEEDUPS = {column: f"× {base}" for base, column in results.SPEEDUP_COLUMNS.items()}
"""Each speedup column -> its header: `× fp32`, `× tf32`."""
REFERENCE_SPEEDUP = {
    results.SPEEDUP_COLUMNS[catalog.reference()]: f"× {catalog.reference()}",
}
"""The speedup over the reference mode alone (the headline's)."""
OWN_LOOP_SPEEDUP = (
    f"`× {catalog.reference()}`: {catalog.reference()}'s step time (at the row's seed) over the "
    "row's; above 1 is faster."
)
"""The legend under an own loop's headline (the `sweep` driver prints it beside sweep.md)."""

TIME = {
    "status": "status",
    "fwd_ms": "fwd ms",
    "bwd_ms": "bwd ms",
    "step_ms": "optim ms",
    "total_ms": "total ms",
    "total_ms_iqr": "IQR ms",
    "samples_per_s": "samples/s",
    "tokens_per_s": "tokens/s",
    "tflops": "TFLOP/s",
    "pct_of_floor": "% of floor",
    "peak_alloc_gib": "peak GiB",
    **SPEEDUPS,
    "noisy": "noisy",
    "windows": "windows",
}
"""`## Time per step`, per batch size."""
FLOOR = {
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
"""`## Where the time goes`, per batch size."""
MEMORY = {
    "param_gib": "params",
    "grad_gib": "grads",
    "optim_state_gib": "Adam state",
    "act_gib": "saved by fwd",
    "model_state_gib": "params+grads+Adam",
    results.STATE_SAVED_COLUMN: f"saved vs {catalog.reference()}",
    results.PEAK_VS_HEADLINE_COLUMN: f"peak ÷ {catalog.headline()}",
    "peak_fwd_gib": "peak fwd",
    "peak_bwd_gib": "peak bwd",
    "peak_opt_gib": "peak optim",
    "peak_alloc_gib": "peak alloc",
    "peak_reserved_gib": "peak reserved",
}
"""`## Memory (GiB)`, per batch size."""
DTYPE = {
    "mode": "mode",
    "autocast_dtype": "autocast",
    "scale_loss": "GradScaler",
    "tf32_matmul": "TF32 matmul",
    "tf32_cudnn": "TF32 cuDNN",
    "output_dtype": "logits",
    "loss_dtype": "loss",
    "param_grad_dtype": "param.grad",
    "param_dtype": "params",
    "optimizer_impl": "Adam",
    "fp8_linears": "float8 Linears (torchao's size rules)",
}
"""`## Dtypes observed`, one row per mode."""
RANK = {
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
HEADLINE = {
    "mode": "mode",
    "total_ms": "step ms",
    "samples_per_s": "samples/s",
    "tokens_per_s": "tokens/s",
    "tflops": "TFLOP/s",
    "pct_of_floor": "% of floor",
    "peak_alloc_gib": "peak GiB",
    **REFERENCE_SPEEDUP,
    "param_grad_dtype": "param.grad",
}
"""The headline table (`bench.publish.report.headline`), and a README `table` block's default."""

NO_CPU_PEAKS = (results.PEAK_VS_HEADLINE_COLUMN, *results.PEAK_COLUMNS)
"""What a CPU run cannot measure (the CUDA allocator's counters): `–`, explained once."""


def table(df: pd.DataFrame, columns: dict[str, str]) -> str:
    """The given columns of `df`, renamed, as a readable markdown table (`bench.text.tables`).
    A cell the row did not measure is `–`; the section's text or the notes say why."""
    present = {k: v for k, v in columns.items() if k in df.columns}
    shown = df[list(present)].rename(columns=present)
    if df.attrs.get("cpu"):  # no allocator peaks on the CPU: the report says so once
        for key in NO_CPU_PEAKS:
            if key in present:
                shown[present[key]] = math.nan
    if "comm_ms" in present:
        # Older rows kept a negative difference of two medians: communication all hidden.
        comm = shown[present["comm_ms"]]
        shown[present["comm_ms"]] = comm.astype(object).where(~(comm < 0), "< noise")
    return tables.markdown(shown)


def shown_axes(df: pd.DataFrame, *, grouped_by: str = "batch_size") -> dict[str, str]:
    """The axes a table of this run shows: `mode`, and every other axis that takes more than one
    value in the run (derived from the case's fields, so a new axis appears by itself)."""
    names = [a for a in results.axes() if a != grouped_by and (a == "mode" or df[a].nunique() > 1)]
    return {a: a for a in names}
