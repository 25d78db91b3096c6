"""What `bench compare` compares: one side (A or B) read into the rounds of each of its cases. A
side is a folder of run folders, a run folder (its passes, else its timed windows), a folder of
pytest-benchmark saves or one save; `UNITS` names each kind of round."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from bench.faults import UsageError
from bench.store import results
from bench.store.run_env import RunEnv
from bench.verdicts.memory import COLUMNS as MEMORY_COLUMNS

UNITS = {
    "runs": "run folders",
    "rounds": "passes of one run (`run --rounds`)",
    "windows": "timed windows of one run (`--repeats`)",
    "saves": "pytest-benchmark saves",
    "calls": "rounds of one pytest-benchmark save",
}
"""Each kind of round -> what it is, in words."""
ONE_PROCESS = ("windows", "calls")
"""Rounds of one process, seconds apart: they cannot show how far two processes differ."""
BENCHMARK = "benchmark"
"""The column that names a pytest-benchmark case (its test name)."""


@dataclass(frozen=True)
class Side:
    """One side of a comparison: its cases (a row each, with `unit` and `rounds`: arrays of step
    times in ms), the key columns a case is matched on, and its environment."""

    path: Path
    kind: str
    """`run` (run folders) or `save` (pytest-benchmark): only sides of one kind compare."""
    keys: list[str]
    cases: pd.DataFrame
    env: RunEnv
    memory: dict[str, list[dict]] | None = None
    """Each case's memory per round, by `case_id` (`bench.verdicts.memory.COLUMNS`)."""


def _is_run(path: Path) -> bool:
    return results.stored(path / results.ROWS) and (path / results.ENV).is_file()


def _is_save(path: Path) -> bool:
    if path.suffix != ".json" or not path.is_file():
        return False
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(data, dict) and isinstance(data.get("benchmarks"), list)


def read(path: Path) -> Side:
    """The side at `path`, whichever of the four kinds it is (else one line says so)."""
    if _is_run(path):
        return _run_side(path, [path], one_run=True)
    if _is_save(path):
        return _save_side(path, [path], one_save=True)
    if path.is_dir():
        runs = sorted(p for p in path.iterdir() if p.is_dir() and _is_run(p))
        if runs:
            return _run_side(path, runs, one_run=False)
        saves = sorted(p for p in path.glob("*.json") if _is_save(p))
        if saves:
            return _save_side(path, saves, one_save=False)
    raise UsageError(
        f"{path} is not a run folder, a folder of run folders, a pytest-benchmark save (JSON) "
        "or a folder of saves"
    )


def of_runs(runs: list[Path]) -> Side:
    """The side that run folders of one revision make, as `read` makes it of a folder of them:
    one run alone gives its passes (else its windows), several runs one round each."""
    if not runs:
        raise ValueError("a side of runs needs at least one run folder")
    return _run_side(runs[0], list(runs), one_run=len(runs) == 1)


def _run_rounds(rec: dict, row: dict) -> tuple[str, list[np.ndarray]]:
    """A run's rounds of one case: its passes, else its windows; a window GradScaler skipped
    whole (every sample NaN) holds no training step and is no round."""
    steps = np.asarray(rec["samples_ms"].get("total", []), dtype=float)
    windows = [np.asarray(w, dtype=float) for w in rec.get("repeats_ms", {}).get("total", [])]
    passes = row.get("rounds")
    passes = int(passes) if isinstance(passes, (int, float)) and passes == passes else 1
    if passes >= 2 and windows and len(windows) % passes == 0:
        per = len(windows) // passes
        unit = "rounds"
        rounds = [np.concatenate(windows[i * per : (i + 1) * per]) for i in range(passes)]
    elif len(windows) >= 2:
        unit, rounds = "windows", windows
    else:
        unit, rounds = "windows", [steps]
    # A round of steps that applied no update (all null: GradScaler skipped each) says nothing.
    return unit, [r for r in rounds if not np.isnan(np.asarray(r, dtype=float)).all()]


def _memory(values: dict) -> dict:
    """A round's memory columns (`bench.verdicts.memory.COLUMNS`), those it has."""
    return {k: values[k] for k in MEMORY_COLUMNS if k in values}


def _run_side(path: Path, runs: list[Path], *, one_run: bool) -> Side:
    keys = [*results.axes(), "world_size"]
    found: dict[tuple, dict] = {}
    memory: dict[str, list[dict]] = {}
    for run in runs:
        rows = results.load(run)
        timed = {r["case_id"]: r for r in results.read_rows(run / results.SAMPLES)}
        for row in rows.to_dict("records"):
            key = tuple(row[k] for k in keys)
            case = found.setdefault(
                key, {**{k: row[k] for k in keys}, "case_id": row["case_id"], "status": "ok"}
            )
            case.setdefault("rounds", [])
            if row["status"] == "ok":
                memory.setdefault(row["case_id"], []).append(_memory(row))
            rec = timed.get(row["case_id"]) if row["status"] == "ok" else None
            if rec is None or len(rec["samples_ms"].get("total", [])) < 1:
                if case["status"] == "ok":
                    case["status"] = row["status"] if row["status"] != "ok" else "no samples"
                continue
            unit, rounds = _run_rounds(rec, row)
            if one_run:
                case["unit"], case["rounds"] = unit, rounds
            elif rounds:  # one round per run: all its training steps
                case["unit"] = "runs"
                case["rounds"].append(np.concatenate(rounds))
    columns = [*keys, "case_id", "status", "unit", "rounds"]
    cases = pd.DataFrame(list(found.values()), columns=columns)
    env = results.read_env(runs[0])
    return Side(path=path, kind="run", keys=keys, cases=cases, env=env, memory=memory)


def _save_side(path: Path, saves: list[Path], *, one_save: bool) -> Side:
    found: dict[str, dict] = {}
    env = RunEnv()
    memory: dict[str, list[dict]] = {}
    for save in saves:
        try:
            data = json.loads(save.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise UsageError(f"{save} is not a readable pytest-benchmark save ({exc})") from exc
        for bench in data["benchmarks"]:
            stats = bench.get("stats", {})
            raw = stats.get("data") or [stats.get("median")]
            if any(v is None for v in raw):
                raise UsageError(f"{save}: benchmark {bench.get('name')!r} has no timings")
            ms = np.asarray(raw, dtype=float) * 1000  # pytest-benchmark keeps seconds
            info = bench.get("extra_info") or {}
            env = env or RunEnv(gpu=info.get("gpu"), torch=info.get("torch"))
            memory.setdefault(bench["name"], []).append(_memory(info))
            case = found.setdefault(
                bench["name"], {BENCHMARK: bench["name"], "case_id": bench["name"], "status": "ok"}
            )
            if one_save:
                case["unit"], case["rounds"] = "calls", [np.asarray([v]) for v in ms]
            else:
                case["unit"] = "saves"
                case.setdefault("rounds", []).append(ms)
    cases = pd.DataFrame(
        list(found.values()), columns=[BENCHMARK, "case_id", "status", "unit", "rounds"]
    )
    return Side(path=path, kind="save", keys=[BENCHMARK], cases=cases, env=env, memory=memory)
