"""A GPU model's history as points: one per revision (the timing runs of one commit, ordered by its
date), each case's step time and peak memory in it and its verdicts against the previous revision
that has the case, judged as `compare` judges (docs/comparing.md)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from bench.faults import UsageError
from bench.store import paths, results
from bench.store.tree import Run, git, run_folders
from bench.verdicts import memory, rounds, sides
from bench.verdicts.defaults import CONFIDENCE, MIN_EFFECT

TIMING = "timing"
"""The kind of folder a history reads (`bench.store.schema.KINDS`)."""


def commit_date(sha: str | None, root: Path = paths.ROOT) -> str | None:
    """The committer date of `sha` in this repository (ISO 8601), or None when unknown."""
    if not sha:
        return None
    return (git(root, "show", "-s", "--format=%cI", sha) or "").strip() or None


def gpu_models(results_dir: Path = paths.RESULTS) -> list[str]:
    """The GPU models of the timing runs in `results_dir` (`cpu` for CPU runs)."""
    found = run_folders(results_dir)
    return sorted({str(r.env.get("gpu")) for r in found if r.kind == TIMING})


def _revision_key(run: Run) -> tuple:
    """What the runs of one revision share: their commit and torch; a run of unknown or
    uncommitted code is a revision alone."""
    sha = run.env.get("commit")
    if not sha or run.env.get("dirty"):
        return ("alone", str(run.path))
    return (sha, str(run.env.get("torch")))


def revisions(results_dir: Path, gpu: str) -> pd.DataFrame:
    """The revisions of one GPU model's timing runs in history order: `label` (R1, ...),
    `commit`, `torch`, `date`, `dated_by` and its run `folders`, oldest first."""
    found = [r for r in run_folders(results_dir) if r.kind == TIMING and r.env.get("gpu") == gpu]
    if not found:
        known = ", ".join(gpu_models(results_dir)) or "none"
        raise UsageError(
            f"--gpu {gpu!r}: no timing run of that GPU in {results_dir} (there: {known})"
        )
    groups: dict[tuple, list[Run]] = {}
    for run in found:  # oldest first
        groups.setdefault(_revision_key(run), []).append(run)
    out = []
    for group in groups.values():
        env = group[0].env
        committed = commit_date(env.get("commit"))
        started = str(env.get("started", ""))
        out.append(
            {
                "run": group[0].path.name if len(group) == 1 else f"{len(group)} runs",
                "commit": (env.get("commit") or "")[:7] or "unknown",
                "torch": env.get("torch"),
                "date": pd.Timestamp(committed or started),
                "dated_by": "commit" if committed else "start",
                "started": started,
                "folders": [r.path for r in group],
            }
        )
    table = pd.DataFrame(out).sort_values(["date", "started"], kind="stable").reset_index(drop=True)
    table.insert(0, "label", [f"R{i + 1}" for i in range(len(table))])
    return table


def _point(label: str, run: str, case: dict) -> dict[str, object]:
    rounds = case["rounds"]
    return {
        "label": label,
        "run": run,
        **{a: case[a] for a in results.axes()},
        "case_id": case["case_id"],
        "status": case["status"],
        "median_ms": float(np.nanmedian(np.concatenate(rounds))) if rounds else np.nan,
        "rounds": len(rounds),
        "unit": case["unit"] if rounds else "",
        "previous": "",
        "ratio": np.nan,
        "p_value": np.nan,
        "p_holm": np.nan,
        "too_few": False,
        "one_process": False,
        "verdict": "first",
    }


def _memory_point(previous: list[dict] | None, now: list[dict]) -> dict[str, object]:
    """A point's peak memory and its memory verdict against the previous revision's rounds."""
    found = memory.judge(previous or [], now)
    verdict = found["memory_verdict"] if previous is not None else "first"
    return {
        "peak_alloc_gib": found["peak_alloc_gib_b"],
        "memory_verdict": verdict,
        "memory_change_pct": found["memory_change_pct"] if previous is not None else np.nan,
    }


def collect(
    results_dir: Path,
    gpu: str,
    *,
    min_effect: float = MIN_EFFECT,
    confidence: float = CONFIDENCE,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(revisions, points): the revisions in history order, and one point per revision and case
    with its median step time and its verdict against the previous revision that has it."""
    revs = revisions(results_dir, gpu)
    points = []
    last: dict[tuple, tuple[str, list, str]] = {}  # a case's key -> its last (label, rounds, unit)
    last_memory: dict[tuple, list[dict]] = {}  # a case's key -> its last revision's memory rounds
    for rev in revs.itertuples():
        side = sides.of_runs(rev.folders)
        judged, pairs = [], []
        for case in side.cases.to_dict("records"):
            key = tuple(case[k] for k in side.keys)
            point = _point(rev.label, rev.run, case)
            rounds_memory = (side.memory or {}).get(str(case["case_id"]), [])
            point |= _memory_point(last_memory.get(key), rounds_memory)
            last_memory[key] = rounds_memory
            if key in last:
                prev_label, prev, prev_unit = last[key]
                point["previous"] = prev_label
                if prev and case["rounds"]:
                    pairs.append((len(judged), (case.get("mode"), prev, case["rounds"])))
                    point["one_process"] = bool({prev_unit, point["unit"]} & set(sides.ONE_PROCESS))
                else:
                    point["verdict"] = "missing"
            last[key] = (rev.label, case["rounds"], point["unit"])
            judged.append(point)
        found = rounds.judge_rounds(
            [p for _, p in pairs], min_effect=min_effect, confidence=confidence
        )
        for (i, _), verdict in zip(pairs, found, strict=True):
            keep = ("ratio", "p_value", "p_holm", "too_few", "verdict")
            judged[i].update({k: verdict[k] for k in keep})
        points += judged
    return revs, pd.DataFrame(points)
