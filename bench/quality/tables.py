"""The files a time-to-quality study writes (`timing`, `runs`, `curves`, `checks`: docs/quality.md),
one JSON object per line appended as each part ends, gzip-compressed when it ends (`compact`),
and read back as DataFrames without torch."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from bench.store import results

TABLES = ("timing", "runs", "curves", "checks")
COLUMNS = {
    "timing": ["mode", "status", "error", "step_ms", "step_ms_p10", "step_ms_p90", "step_ms_iqr"],
    "runs": ["mode", "seed", "status", "error", "steps", "stopped", "diverged_at_step",
             "skipped_steps"],
    "curves": ["mode", "seed", "step", "train_loss", "heldout_loss", "heldout_accuracy"],
    "checks": ["mode", "seed", "step", "tensor", "numel", "lost_unscaled", "lost_scaled",
               "kept_by_scaler", "zero_unscaled", "zero_scaled", "subnormal_unscaled",
               "subnormal_scaled"],
}  # fmt: skip
"""The columns each table has at least (an empty table has them too)."""
BUDGET, PAST_BEST, DIVERGED = "budget", "past its best", "diverged"
"""A run's `stopped`: it trained every step, the stopping rule ended it, or its loss went
non-finite (empty in a study made before runs recorded it)."""


def path(run_dir: Path, table: str) -> Path:
    return Path(run_dir) / f"{table}.jsonl"


def append(run_dir: Path, table: str, rows: list[dict]) -> None:
    results.unpack(path(run_dir, table))  # a finished study resumed: back to plain lines first
    for row in rows:
        results.append_jsonl(path(run_dir, table), row)


def compact(run_dir: Path) -> None:
    """Each table gzip-compressed in place (a finished study's), as `results.pack` packs."""
    for table in TABLES:
        if path(run_dir, table).is_file():
            results.pack(path(run_dir, table))


def _rows(run_dir: Path, table: str) -> list[dict]:
    return results.read_jsonl(path(run_dir, table))  # its packed copy where only that exists


def load(run_dir: Path) -> dict[str, pd.DataFrame]:
    """Every table of the study, by name."""
    out = {}
    for table in TABLES:
        df = results.frame(_rows(run_dir, table))
        for column in COLUMNS[table]:
            if column not in df:
                df[column] = pd.Series(dtype=object)
        out[table] = df
    return out


def done(run_dir: Path) -> set[tuple[str, int]]:
    """The (mode, seed) runs the study has finished, whatever their status."""
    return {(r["mode"], int(r["seed"])) for r in _rows(run_dir, "runs")}
