"""Rendering a largest-batch folder (`bench.jobs.maxbatch` writes it): the summary per mode and
variant and report.md, from trials.jsonl and env.json alone. Imports no torch, so `report` of such
a folder and the README's `maxbatch` block start at once.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from bench.store import errors, paths, results
from bench.text import tables

HEADERS = {
    "largest_batch": "largest batch",
    "samples_per_s": "samples/s there",
    "peak_alloc_gib": "peak GiB there",
    "first_failing_batch": "first failing batch",
    "limited_by": "limited by",
    "max_leftover_gib": "max leftover GiB",
}
"""The summary table's column -> its heading, here and in the README's `maxbatch` block."""
TRIAL_COLUMNS = (
    "mode",
    "variant",
    "batch_size",
    "status",
    "samples_per_s",
    "peak_alloc_gib",
    "leftover_gib",
    "error",
)
"""The columns of every trial the report shows, those the trials have."""


def summarize_trials(trials: pd.DataFrame, limit: int) -> pd.DataFrame:
    """Per mode and variant: the largest batch that trained, its figures, why it stopped."""
    out = []
    for (mode, variant), g in trials.groupby(["mode", "variant"], sort=False):
        good = g[g["status"] == "ok"].sort_values("batch_size")
        failed = g[g["status"] != "ok"].sort_values("batch_size")
        best = good.iloc[-1] if len(good) else None
        first_bad = failed.iloc[0] if len(failed) else None
        if first_bad is None and best is not None and limit and best["batch_size"] < limit:
            # Nothing failed, yet the limit was not reached: the search was stopped (Ctrl-C, a
            # time limit) before it ended.
            stop = (
                f"not known: the search stopped at batch {int(best['batch_size'])}, short of "
                f"its limit ({limit})"
            )
        elif first_bad is None:
            stop = f"the search's limit ({limit}): every size tried trained"
        elif first_bad["status"] == "unsupported":  # refused before any trial ran
            stop = f"unsupported: {first_bad['error']}"
        elif first_bad["status"] == "oom":
            stop = f"memory: out of memory at batch {first_bad['batch_size']}"
        else:
            stop = f"{first_bad['status']} at batch {first_bad['batch_size']}: {first_bad['error']}"
        out.append(
            {
                "mode": mode,
                "variant": variant,
                "largest_batch": int(best["batch_size"]) if best is not None else None,
                "samples_per_s": best["samples_per_s"] if best is not None else math.nan,
                "peak_alloc_gib": math.nan
                if best is None
                else best.get("peak_alloc_gib", math.nan),
                "first_failing_batch": None if first_bad is None else int(first_bad["batch_size"]),
                "limited_by": stop,
                "trials": len(g),
                # An unsupported row ran nothing, so it has no leftover to record.
                "max_leftover_gib": g["leftover_gib"].max() if "leftover_gib" in g else math.nan,
            }
        )
    return pd.DataFrame(out)


def render(run_dir: Path) -> Path:
    """report.md and results.csv of a maxbatch folder, from its trials and env.json alone."""
    info = results.read_env(run_dir)
    cfg = info["maxbatch_config"]
    trials = results.frame(results.read_jsonl(run_dir / results.TRIALS))
    lines = [f"# ampbench largest batch `{info.get('run_name', '')}`", ""]
    lines += ["Produced by:", "", "```", paths.shown_command(info.get("command", "")), "```", ""]
    lines += [
        f"GPU {info.get('gpu')}, torch {info.get('torch')}, commit `{info.get('commit')}`"
        f"{' (with uncommitted changes)' if info.get('dirty') else ''}; preset "
        f"{cfg.get('preset')}, {cfg.get('optimizer')} Adam. Each trial builds the case and "
        f"trains {cfg.get('warmup', '–')} + {cfg.get('steps', '–')} full steps; the search "
        f"doubles from {cfg.get('start', '–')} up to {cfg.get('limit', '–')}, then bisects until "
        f"the gap is at most {tables.cell(cfg.get('resolution', 1 / 16) * 100)}% of the largest "
        "good batch.",
        "",
        "Isolation: trials run in one process; after each, its state is dropped, the garbage "
        "collector runs and the CUDA caching allocator is emptied. `max leftover GiB` is the "
        "memory still allocated after that cleanup (0 means nothing leaked into the next trial).",
        "",
    ]
    if "ended" not in info:
        lines += [
            "**This search stopped before it ended** (interrupted, or still running): a mode "
            "whose search had not failed yet is limited by `not known`.",
            "",
        ]
    if trials.empty:
        lines += ["No trial finished."]
    else:
        table = summarize_trials(trials, cfg.get("limit"))
        results.write_csv(table, run_dir)
        lines += [
            "## Largest batch per mode",
            "",
            table.rename(columns=HEADERS).pipe(tables.markdown),
            "",
            "## Every trial",
            "",
            trials.filter(items=TRIAL_COLUMNS).pipe(tables.markdown),
            "",
            *errors.where(trials.get(errors.COLUMN, [])),
        ]
    path = run_dir / results.REPORT
    path.write_text("\n".join(lines))
    return path
