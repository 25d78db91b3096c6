"""The files of a results folder (env.json, rows.jsonl, samples.jsonl, results.csv, report.md;
gzip-packed when published: docs/results-folder.md), and reading them back into one DataFrame
with the derived columns. Needs no torch."""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from bench.cases import case
from bench.faults import UsageError
from bench.ground import catalog
from bench.store import jsonlines, older, schema
from bench.store.run_env import RunEnv

ROWS, SAMPLES, ENV = "rows.jsonl", "samples.jsonl", "env.json"
NUMERICS_DIR = "numerics"
"""Where `run --numerics` puts its short study, inside the run folder."""
TRIALS = "trials.jsonl"
"""A largest-batch search's rows: one per batch size tried."""
ROUNDS = "rounds.jsonl"
"""The windows of a case's rounds before its last (`run --rounds`), until its row is written."""

PHASES = {"fwd": "forward", "bwd": "backward", "step": "optimizer step"}
"""The timed phases of a train step, in order (`<phase>_ms` columns, samples.jsonl's keys), with
their names in words; samples.jsonl adds `total`, the whole step."""
CSV, REPORT = "results.csv", "report.md"

SPEEDUP_COLUMNS = {base: f"speedup_vs_{base}" for base in catalog.speedup_baselines()}
"""Each speedup baseline (`bench.ground.catalog.speedup_baselines`) -> its derived column: the
base mode's total_ms over a row's."""
STATE_SAVED_COLUMN = f"model_state_saved_vs_{catalog.reference()}"
"""The reference mode's params + grads + Adam state less a row's (GiB)."""
PEAK_VS_HEADLINE_COLUMN = f"peak_vs_{catalog.headline().replace('-', '_')}"
"""A row's allocated peak over the headline mode's: what a mode beyond autocast saves."""

METRIC_COLUMNS = [
    "status",
    "fwd_ms",
    "bwd_ms",
    "step_ms",
    "total_ms",
    "total_ms_iqr",
    "samples_per_s",
    "world_size",
    "nodes",
    "global_batch_size",
    "samples_per_s_per_gpu",
    "scaling_efficiency",
    "tflops",
    "floor_ms",
    "pct_of_floor",
    "peak_alloc_gib",
    "peak_reserved_gib",
    *SPEEDUP_COLUMNS.values(),
    "output_dtype",
    "loss_dtype",
    "param_grad_dtype",
]
"""Measured and derived columns other tools may rely on, by these names, after the axes."""


class CorruptFolder(UsageError):
    """A results file that cannot be read: named in one line, never repaired silently."""


def axes() -> list[str]:
    """The columns that identify a case: the axes of `Case`, in field order."""
    return list(case.axis_defaults())


def leading_columns() -> list[str]:
    """Axes, then the metric columns: the first columns of every table."""
    return [*axes(), *METRIC_COLUMNS]


def append_jsonl(path: Path, obj: dict) -> None:
    with path.open("a") as f:
        f.write(jsonlines.dumps(obj) + "\n")
        f.flush()


def packed(path: Path) -> Path:
    """Where `pack` keeps the file `path`, gzip-compressed."""
    return path.with_name(path.name + ".gz")


def pack(path: Path) -> None:
    """Replace `path` with its gzip-compressed copy (`packed`); the same bytes make the same
    file (no time stamp in it)."""
    with path.open("rb") as src, gzip.GzipFile(packed(path), "wb", 9, mtime=0) as dst:
        dst.write(src.read())
    path.unlink()


def stored(path: Path) -> bool:
    """Whether `path` is there as a file, or as its packed copy (a published folder's)."""
    return path.is_file() or packed(path).is_file()


def write_csv(table: pd.DataFrame, run_dir: Path) -> Path:
    """`table` as the folder's results.csv, in the form the folder keeps it: packed
    (`results.csv.gz`, no time stamp) where a packed copy is there already (a published folder),
    else plain. Returns the file written."""
    path = run_dir / CSV
    if not packed(path).is_file():
        table.to_csv(path, index=False)
        return path
    text = table.to_csv(index=False).encode()
    with gzip.GzipFile(packed(path), "wb", 9, mtime=0) as dst:
        dst.write(text)
    path.unlink(missing_ok=True)
    return packed(path)


def unpack(path: Path) -> None:
    """Before appending to `path`: its packed copy, where only that exists, unpacked in place."""
    if not path.exists() and packed(path).exists():
        path.write_bytes(gzip.decompress(packed(path).read_bytes()))
        packed(path).unlink()


def read_jsonl(path: Path) -> list[dict]:
    """Every object of a JSON-lines file, or of its packed copy where only that exists; a null
    in a list read as NaN (`jsonlines.loads`), and an older file's `NaN` read as it always was. A
    truncated last line (a run killed mid-write) is left out; any other line that is not a JSON
    object is damage and raises `CorruptFolder`."""
    if path.exists():
        lines = path.read_text().splitlines()
    elif packed(path).exists():
        lines = gzip.decompress(packed(path).read_bytes()).decode().splitlines()
    else:
        return []
    out = []
    for i, line in enumerate(lines):
        try:
            obj = jsonlines.loads(line)
        except json.JSONDecodeError as exc:
            if i == len(lines) - 1:
                continue
            raise CorruptFolder(f"{path}: line {i + 1} is not JSON ({exc.msg})") from exc
        if not isinstance(obj, dict):
            raise CorruptFolder(f"{path}: line {i + 1} is not a JSON object")
        out.append(obj)
    return out


def frame(rows: list[dict]) -> pd.DataFrame:
    """Rows read from a JSON-lines file as a DataFrame: a column null in every row is a number
    never finite (a file written before nulls held NaN would have made it float), so float, not
    None objects."""
    df = pd.DataFrame(rows)
    blank = [c for c in df.columns if df[c].dtype == object and len(df) and df[c].isna().all()]
    if blank:
        df[blank] = df[blank].astype(float)
    return df


def read_rows(path: Path) -> list[dict]:
    """`read_jsonl` of a file of case rows (rows.jsonl, samples.jsonl): each names its case."""
    rows = read_jsonl(path)
    for i, row in enumerate(rows):
        if "case_id" not in row:
            raise CorruptFolder(f"{path}: row {i + 1} has no case_id")
    return rows


def repair_jsonl(path: Path) -> str | None:
    """Before appending to a file that a killed run may have left half-written: move a partial
    last line (no newline, or not JSON) into `<file>.partial` and cut the file after the last
    whole line. Returns a sentence saying what was moved, or None. Damage before the last line
    raises `CorruptFolder`, as reading does. A packed file is unpacked first."""
    unpack(path)
    if not path.exists():
        return None
    lines = path.read_bytes().splitlines(keepends=True)
    good = 0
    for i, line in enumerate(lines):
        try:
            json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            if i != len(lines) - 1:
                raise CorruptFolder(f"{path}: line {i + 1} is not JSON") from exc
            break
        if not line.endswith(b"\n"):
            break
        good += len(line)
    tail = b"".join(lines)[good:]
    if not tail:
        return None
    with (path.parent / (path.name + ".partial")).open("ab") as f:
        f.write(tail.rstrip(b"\n") + b"\n")
    with path.open("r+b") as f:
        f.truncate(good)
    return f"{path.name}: moved a partial last line ({len(tail)} bytes) to {path.name}.partial"


def write_env(run_dir: Path, env: Mapping[str, object]) -> None:
    """Write `env` as env.json; a key that `RunEnv` does not name raises `KeyError` first."""
    record = (env if isinstance(env, RunEnv) else RunEnv(env)).record()
    # Written whole to a temporary file and renamed: a kill never leaves half an env.json.
    tmp = run_dir / f".{ENV}.tmp"
    tmp.write_text(json.dumps(record, indent=2, default=str) + "\n")
    tmp.replace(run_dir / ENV)


def read_env(run_dir: Path) -> RunEnv:
    """A folder's env.json, of any version, as a `RunEnv` (an unknown key read raises)."""
    path = Path(run_dir) / ENV
    try:
        env = json.loads(path.read_text())
    except FileNotFoundError as exc:
        raise CorruptFolder(f"{run_dir} is not a results folder (no {ENV})") from exc
    except OSError as exc:  # a file where a folder should be, no permission, ...
        raise CorruptFolder(f"{run_dir} is not a readable results folder ({exc.strerror})") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CorruptFolder(f"{path} is not valid JSON ({exc})") from exc
    if not isinstance(env, dict):
        raise CorruptFolder(f"{path} does not hold a JSON object")
    return RunEnv.read(schema.migrate_env(env, Path(run_dir)))


def _of_base(df: pd.DataFrame, axis: str, base: str, column: str) -> np.ndarray:
    """Each row's `column` in the row that passed at `axis` = `base`, every other axis equal;
    NaN where there is none."""
    others = [a for a in axes() if a != axis]
    ref = df[(df[axis] == base) & (df["status"] == "ok")][[*others, column]]
    merged = df[others].merge(ref, on=others, how="left", validate="many_to_one")
    return merged[column].to_numpy(float)


def _with_speedups(df: pd.DataFrame) -> pd.DataFrame:
    """speedup_vs_<base> = the base mode's total_ms / this row's total_ms, matched on every other
    axis; above 1 means faster than the base. Empty where the base did not run or did not pass."""
    for base, column in SPEEDUP_COLUMNS.items():
        df[column] = _of_base(df, "mode", base, "total_ms") / df["total_ms"].to_numpy(float)
        df.loc[df["status"] != "ok", column] = math.nan
    return df


OWN_MODEL = "own:"
"""The prefix of an own loop's model name (`bench.ownloop`'s probe, the `sweep` driver)."""


def own_loop_rows(df: pd.DataFrame) -> pd.Series:
    """Which rows are an own loop's."""
    return df.get("model", pd.Series("", index=df.index)).astype(str).str.startswith(OWN_MODEL)


def _with_memory(df: pd.DataFrame) -> pd.DataFrame:
    """model_state_gib = params + grads + Adam's state; `STATE_SAVED_COLUMN` = the reference
    mode's minus this row's; `PEAK_VS_HEADLINE_COLUMN` = this row's allocated peak over the
    headline mode's, matched on every other axis (what a mode beyond autocast saves)."""
    parts = ("param_gib", "grad_gib", "optim_state_gib")
    if not set(parts) <= set(df.columns):
        return df
    # An own loop's rows written before gradients were sized from the parameters read them after
    # the loop's zero_grad had freed them: 0 beside parameters is not a measurement.
    own = own_loop_rows(df)
    df.loc[own & (df["grad_gib"] == 0) & (df["param_gib"] > 0), "grad_gib"] = math.nan
    df["model_state_gib"] = df[list(parts)].sum(axis=1, min_count=len(parts))
    for base, col, new, how in (
        (catalog.reference(), "model_state_gib", STATE_SAVED_COLUMN, "minus"),
        (catalog.headline(), "peak_alloc_gib", PEAK_VS_HEADLINE_COLUMN, "over"),
    ):
        if col not in df.columns:
            continue
        mine, theirs = df[col].to_numpy(float), _of_base(df, "mode", base, col)
        df[new] = theirs - mine if how == "minus" else mine / theirs
    return df


RESIDUE_LIMIT_GIB = 0.25
"""Memory still allocated when a case starts beyond what a library's workspaces hold is an earlier
case's. The runner takes it out of the case's peaks, right only while it stays allocated; a
larger residue can be freed during the case and leave its peaks too low (even negative), so
above this limit a row's peaks are not read as measured."""

PEAK_COLUMNS = (
    "peak_alloc_gib",
    "peak_reserved_gib",
    "peak_fwd_gib",
    "peak_bwd_gib",
    "peak_opt_gib",
)
"""A row's peaks as the CUDA allocator counts them: none on the CPU."""
PEAK_SPREAD_COLUMNS = ("peak_alloc_gib_spread", "peak_reserved_gib_spread")
"""Over the ranks of a run of several, the highest peak less the lowest."""


def _with_clean_peaks(df: pd.DataFrame) -> pd.DataFrame:
    """No peak memory for a row that began with more than `RESIDUE_LIMIT_GIB` of an earlier
    case's memory still allocated (the largest over its ranks); its error says so."""
    if "residue_gib" not in df:
        return df
    unclean = df["residue_gib"].astype(float) > RESIDUE_LIMIT_GIB
    if not unclean.any():
        return df
    peaks = [c for c in (*PEAK_COLUMNS, *PEAK_SPREAD_COLUMNS) if c in df]
    df[peaks] = df[peaks].astype(float)
    df.loc[unclean, peaks] = math.nan
    # The note goes on measured rows; a failed row's error already says what went wrong.
    noted = unclean & df["status"].isin(["ok", "nonfinite"])
    note = df.loc[noted, "residue_gib"].map(
        lambda gib: (
            f"peak memory not measured: {gib:.2f} GiB of an earlier case was still "
            "allocated at the start"
        )
    )
    errors = df["error"] if "error" in df else pd.Series("", index=df.index)
    df["error"] = errors.astype(object).where(errors.notna(), "").astype(str)
    old = df.loc[noted, "error"]
    df.loc[noted, "error"] = (old + "; ").where(old != "", "") + note
    return df


def _with_scaling(df: pd.DataFrame) -> pd.DataFrame:
    """scaling_efficiency = a distributed row's samples/s per GPU over that of the same case
    with `parallel=none` (every other axis equal) in the same run: 1 is perfect weak scaling.
    Empty for the `none` rows themselves and where the baseline did not pass."""
    per_gpu = df["samples_per_s_per_gpu"].to_numpy(dtype=float)
    df["scaling_efficiency"] = per_gpu / _of_base(df, "parallel", "none", "samples_per_s_per_gpu")
    df.loc[(df["status"] != "ok") | (df["parallel"] == "none"), "scaling_efficiency"] = math.nan
    return df


def load(run_dir: str | Path) -> pd.DataFrame:
    """A run's rows as a DataFrame, with derived speedups; the last row of a case wins.

    An axis that a row lacks (a folder older than the axis) takes the axis's default; a row's
    sizes, of any layout, are read as today's (`schema.migrate_row`)."""
    rows = [schema.migrate_row(row) for row in read_rows(Path(run_dir) / ROWS)]
    if not rows:
        return pd.DataFrame(columns=leading_columns())
    df = frame(rows).drop_duplicates("case_id", keep="last").reset_index(drop=True)
    for name, default in case.axis_defaults().items():
        if name not in df.columns:
            df[name] = default
    df = older.with_rank_columns(df)
    for col in METRIC_COLUMNS:
        if col not in df.columns:
            df[col] = math.nan
    df = _with_memory(_with_speedups(_with_clean_peaks(df)))
    df = _with_scaling(df)
    lead = leading_columns()
    return df[lead + [c for c in df.columns if c not in lead]]


def load_samples(run_dir: str | Path) -> pd.DataFrame:
    """Raw samples in long form: one row per (case_id, phase, step) with the value in `ms`; a
    timed step GradScaler skipped has `ms` NaN (`bench.measure.timing.SKIPPED`)."""
    records = [
        {"case_id": rec["case_id"], "phase": phase, "step": i, "ms": ms}
        for rec in read_rows(Path(run_dir) / SAMPLES)
        for phase, values in rec["samples_ms"].items()
        for i, ms in enumerate(values)
    ]
    return pd.DataFrame(records, columns=["case_id", "phase", "step", "ms"])
