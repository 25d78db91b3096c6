"""The `sweep` driver's runs read back from its folder for its two judges: each run's logged
metric and the per-run summary the training judge reads, and the runs timed alone with the look
each joined for the speed judge, so the driver's looks and the mode table state the same
decisions."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from bench.ownloop import folder
from bench.store import results
from bench.verdicts import driver, training
from bench.verdicts.defaults import MIN_EFFECT

METRICS = ("val_loss", "eval_loss", "loss")
"""The metrics the training judge reads when none is named, the first that every run logged."""


def _metrics(run_dir: Path, row: pd.Series) -> pd.DataFrame:
    path = run_dir / str(row.get("run", "")) / "metrics.jsonl"
    if not isinstance(row.get("run"), str) or not path.is_file():
        return pd.DataFrame(columns=["step", "name", "value"])
    out = pd.DataFrame(
        [json.loads(line) for line in path.read_text().splitlines() if line.strip()],
        columns=["step", "name", "value"],
    )
    # A value that was not finite is null in the file (NaN in a folder from before): NaN here.
    out["value"] = pd.to_numeric(out["value"], errors="coerce").astype(float)
    return out


def start_step(run_dir: Path, row: pd.Series) -> int:
    """The framework's global step when the run began, as its callback recorded it in the run's
    env.json (`folder.START_STEP`): above 0, it resumed from a checkpoint. 0 where none was
    recorded (a plain loop, a folder from before the record)."""
    path = run_dir / str(row.get("run", "")) / "env.json"
    if not isinstance(row.get("run"), str) or not path.is_file():
        return 0
    return int(results.read_env(path.parent).get(folder.START_STEP) or 0)


def choose_metric(logged: list[pd.DataFrame], asked: str | None) -> tuple[str | None, str]:
    """(the metric, or None, and why)."""
    if not logged:
        return None, "no run finished"
    names = [set(m["name"]) for m in logged]
    if asked is not None:
        missing = sum(asked not in n for n in names)
        if missing:
            return None, f"{missing} of {len(names)} runs did not log {asked!r}"
        return asked, f"`{asked}`, as asked"
    common = set.intersection(*names)
    for name in METRICS:
        if name in common:
            return name, f"`{name}`, the first of {', '.join(METRICS)} every run logged"
    return None, f"the runs did not all log any of {', '.join(METRICS)}"


def summary(
    run_dir: Path, rows: pd.DataFrame, asked: str | None
) -> tuple[pd.DataFrame, str | None, str]:
    """The per-run summary of the finished runs (empty where no metric can be judged), the
    metric and why it was chosen."""
    done = rows[rows["status"].isin(["ok", "nonfinite"])]
    logged = {cid: _metrics(run_dir, r) for cid, r in done.set_index("case_id").iterrows()}
    metric, why = choose_metric(list(logged.values()), asked)
    if metric is None:
        return pd.DataFrame(), None, why
    curves, runs = [], []
    for cid, m in logged.items():
        r = done.set_index("case_id").loc[cid]
        values = m[m["name"] == metric].sort_values("step")
        bad = values[~np.isfinite(values["value"].astype(float))]
        runs.append(
            {"mode": r["mode"], "seed": int(r["seed"]), "steps": int(r.get("probe_steps", 0) or 0),
             "status": "diverged" if len(bad) else "ok",
             "diverged_at_step": int(bad["step"].iloc[0]) if len(bad) else -1,
             "start_step": start_step(run_dir, r)}
        )  # fmt: skip
        for _, v in values.iterrows():
            curves.append(
                {"mode": r["mode"], "seed": int(r["seed"]), "step": int(v["step"]),
                 "heldout_loss": float(v["value"]), "heldout_accuracy": math.nan}
            )  # fmt: skip
    return training.per_run(pd.DataFrame(curves), pd.DataFrame(runs)), metric, why


def timed_alone(rows: pd.DataFrame) -> pd.DataFrame:
    """The finished runs the speed rule timed alone (`timed_look`; in a folder from before
    timed looks, every run that ran alone)."""
    ok = rows[rows["status"] == "ok"] if len(rows) else rows
    if "timed_look" in ok:
        return ok[ok["timed_look"].notna()]
    return ok[ok["ran"] != "packed"] if "ran" in ok else ok


def speed(run_dir: Path, rows: pd.DataFrame, reference: str) -> dict[str, dict]:
    """mode -> the speed verdict over the sweep's timed looks (`driver.speed_over_looks`), from
    the rows, samples.jsonl and the plan env.json keeps (a folder from before timed looks: one
    look, each run alone in it)."""
    samples = {r["case_id"]: r["samples_ms"] for r in results.read_rows(run_dir / results.SAMPLES)}
    info = results.read_env(run_dir)
    plan = info.get("speed_plan")
    timed = timed_alone(rows)
    runs: dict[str, list] = {mode: [] for mode in rows["mode"].unique()}
    at: dict[str, list] = {mode: [] for mode in runs}
    for _, r in timed.iterrows():
        runs[r["mode"]].append(samples.get(r["case_id"], {}).get("total") or [])
        look = r.get("timed_look")
        at[r["mode"]].append(1 if look is None or pd.isna(look) else int(look))  # old folder: 1
    return driver.speed_over_looks(
        runs, at, reference, None if plan is None else driver.SpeedPlan(**plan),
        min_effect=info.get("min_effect", MIN_EFFECT),
    )  # fmt: skip
