"""The results folder of a run, and reading it back.

`results/<UTC timestamp>_<gpu>_<git short sha>/` holds:
- `env.json`: what the run ran on, its configuration and ceilings (`bench.env`);
- `rows.jsonl`: one flat JSON object per case, appended and flushed as each case finishes, so a
  killed run keeps every finished case;
- `samples.jsonl`: the raw per-step milliseconds of each phase of each case, for later tools
  (`bench compare` reads them);
- `results.csv` and `report.md`, rendered from the rows when the run ends (or by `bench report`).

Derived columns (speedups) are computed when rows are loaded, from the measured columns.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

ROWS, SAMPLES, ENV = "rows.jsonl", "samples.jsonl", "env.json"
CSV, REPORT = "results.csv", "report.md"

AXES = [
    "mode",
    "optimizer",
    "batch_size",
    "input_size",
    "hidden_size",
    "num_classes",
    "device",
    "seed",
]
"""The columns that identify a case; everything else in a row is measured or derived."""

LEADING_COLUMNS = [
    "mode",
    "optimizer",
    "batch_size",
    "input_size",
    "hidden_size",
    "num_classes",
    "status",
    "fwd_ms",
    "bwd_ms",
    "step_ms",
    "total_ms",
    "total_ms_iqr",
    "samples_per_s",
    "tflops",
    "floor_ms",
    "pct_of_floor",
    "peak_alloc_gib",
    "peak_reserved_gib",
    "speedup_vs_fp32",
    "speedup_vs_tf32",
    "output_dtype",
    "loss_dtype",
    "param_grad_dtype",
]
"""The columns other tools may rely on, by these names, first in every table."""


def run_dir_name(started: datetime, gpu: str, commit: str | None) -> str:
    stamp = started.astimezone(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    gpu_slug = re.sub(r"[^A-Za-z0-9]+", "-", gpu).strip("-") or "unknown"
    sha = re.sub(r"[^0-9a-fA-F]", "", commit or "")[:7] or "nogit"
    return f"{stamp}_{gpu_slug}_{sha}"


def new_run_dir(parent: Path, name: str) -> Path:
    """Create a fresh folder; an existing one is never reused or overwritten."""
    parent.mkdir(parents=True, exist_ok=True)
    for n in range(1, 1000):
        path = parent / (name if n == 1 else f"{name}-{n}")
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path
    raise FileExistsError(f"no free run folder name under {parent} for {name}")


def append_jsonl(path: Path, obj: dict) -> None:
    with path.open("a") as f:
        f.write(json.dumps(obj, default=str) + "\n")
        f.flush()


def read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    lines = path.read_text().splitlines()
    out = []
    for i, line in enumerate(lines):
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            # A run killed mid-write can leave a truncated last line; anything else is damage.
            if i != len(lines) - 1:
                raise
    return out


def write_env(run_dir: Path, env: dict) -> None:
    (run_dir / ENV).write_text(json.dumps(env, indent=2, default=str) + "\n")


def read_env(run_dir: Path) -> dict:
    return json.loads((Path(run_dir) / ENV).read_text())


def _with_speedups(df: pd.DataFrame) -> pd.DataFrame:
    """speedup_vs_<base> = the base mode's total_ms / this row's total_ms, matched on every other
    axis; above 1 means faster than the base. Empty where the base did not run or did not pass."""
    others = [a for a in AXES if a != "mode" and a in df.columns]
    for base in ("fp32", "tf32"):
        col = f"speedup_vs_{base}"
        ok_base = df[(df["mode"] == base) & (df["status"] == "ok")]
        ref = ok_base[[*others, "total_ms"]].rename(columns={"total_ms": "_base_ms"})
        merged = df[others].merge(ref, on=others, how="left")
        ratio = merged["_base_ms"].to_numpy() / df["total_ms"].to_numpy()
        df[col] = ratio
        df.loc[df["status"] != "ok", col] = float("nan")
    return df


def load(run_dir: str | Path) -> pd.DataFrame:
    """A run's rows as a DataFrame, with derived speedups; the last row of a case wins."""
    rows = read_jsonl(Path(run_dir) / ROWS)
    if not rows:
        return pd.DataFrame(columns=LEADING_COLUMNS)
    df = pd.DataFrame(rows).drop_duplicates("case_id", keep="last").reset_index(drop=True)
    for col in LEADING_COLUMNS:
        if col not in df.columns:
            df[col] = float("nan")
    df = _with_speedups(df)
    return df[LEADING_COLUMNS + [c for c in df.columns if c not in LEADING_COLUMNS]]


def load_samples(run_dir: str | Path) -> pd.DataFrame:
    """Raw samples in long form: one row per (case_id, phase, step) with the value in `ms`."""
    records = [
        {"case_id": rec["case_id"], "phase": phase, "step": i, "ms": ms}
        for rec in read_jsonl(Path(run_dir) / SAMPLES)
        for phase, values in rec["samples_ms"].items()
        for i, ms in enumerate(values)
    ]
    return pd.DataFrame(records, columns=["case_id", "phase", "step", "ms"])
