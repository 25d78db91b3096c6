"""The recipe table of a user's own run (`ampbench recipes`): recipes.md in the driver's folder,
from its rows, samples and each run's probe files alone (no torch).

- **Speed** is the rounds verdict (`rounds_verdict`, the one `compare`, `ab` and `history`
  give) of each recipe's step times against the reference's. Its observations are the medians
  of `WINDOWS` consecutive windows of each run's timed steps, over every seed's run: fresh
  processes, so the drift between runs is part of the spread it weighs.
- **Training** is the training judge (`bench.verdicts.training.trains_like_fp32`) on the metric
  the runs log (lower is better), a held-out loss where they log one; the best value of each run
  over its logged steps, against fp32's, over the seeds.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from bench.publish.tables import markdown
from bench.recipes import catalog
from bench.store import results
from bench.verdicts import training
from bench.verdicts.rounds import rounds_verdict  # the one import of the rounds verdict here

RECIPES_MD = "recipes.md"
METRICS = ("val_loss", "eval_loss", "loss")
"""The metrics the training judge reads when none is named, the first that every run logged."""
WINDOWS = 4
"""Windows each run's step times are cut into: one observation each for the speed verdict."""


def _metrics(run_dir: Path, row: pd.Series) -> pd.DataFrame:
    path = run_dir / str(row.get("run", "")) / "metrics.jsonl"
    if not isinstance(row.get("run"), str) or not path.is_file():
        return pd.DataFrame(columns=["step", "name", "value"])
    return pd.DataFrame(
        [json.loads(line) for line in path.read_text().splitlines() if line.strip()],
        columns=["step", "name", "value"],
    )


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


def observations(samples: dict, case_id: str) -> list[float]:
    """The medians of `WINDOWS` consecutive windows of one run's timed step times."""
    totals = samples.get(case_id, {}).get("total") or []
    if len(totals) < WINDOWS:
        return [float(np.median(totals))] if totals else []
    return [float(np.median(w)) for w in np.array_split(np.asarray(totals, float), WINDOWS)]


def speed(rows: pd.DataFrame, samples: dict, reference: str) -> dict[str, dict]:
    """mode -> the rounds verdict of its step times against `reference`'s (or why none)."""
    ok = rows[rows["status"] == "ok"]
    obs = {
        mode: [x for cid in g["case_id"] for x in observations(samples, cid)]
        for mode, g in ok.groupby("mode", sort=False)
    }
    out: dict[str, dict] = {}
    for mode in rows["mode"].unique():
        if mode == reference:
            out[mode] = {"verdict": "reference"}
        elif not obs.get(mode) or not obs.get(reference):
            out[mode] = {"verdict": "not known", "why": f"no timed run of {mode} or {reference}"}
        else:
            out[mode] = rounds_verdict(obs[reference], obs[mode])
    return out


def judge_training(
    run_dir: Path, rows: pd.DataFrame, asked: str | None
) -> tuple[dict[str, training.Verdict], pd.DataFrame, str | None, str]:
    """mode -> the training verdict, the per-run summary, the metric and why it was chosen."""
    done = rows[rows["status"].isin(["ok", "nonfinite"])]
    logged = {cid: _metrics(run_dir, r) for cid, r in done.set_index("case_id").iterrows()}
    metric, why = choose_metric(list(logged.values()), asked)
    if metric is None:
        none = training.Verdict(training.NOT_KNOWN, why)
        return {m: none for m in rows["mode"].unique()}, pd.DataFrame(), None, why
    curves, runs = [], []
    for cid, m in logged.items():
        r = done.set_index("case_id").loc[cid]
        values = m[m["name"] == metric].sort_values("step")
        bad = values[~np.isfinite(values["value"].astype(float))]
        runs.append(
            {"mode": r["mode"], "seed": int(r["seed"]), "steps": int(r.get("probe_steps", 0) or 0),
             "status": "diverged" if len(bad) else "ok",
             "diverged_at_step": int(bad["step"].iloc[0]) if len(bad) else -1}
        )  # fmt: skip
        for _, v in values.iterrows():
            curves.append(
                {"mode": r["mode"], "seed": int(r["seed"]), "step": int(v["step"]),
                 "heldout_loss": float(v["value"]), "heldout_accuracy": math.nan}
            )  # fmt: skip
    summary = training.per_run(pd.DataFrame(curves), pd.DataFrame(runs))
    verdicts = {
        m: training.trains_like_fp32(summary, m, synthetic=False) for m in rows["mode"].unique()
    }
    return verdicts, summary, metric, why


def _speed_cells(v: dict) -> tuple[float, str, str]:
    if "ratio" not in v:
        return math.nan, "", v["verdict"] + (f" ({v['why']})" if v.get("why") else "")
    span = (
        f"[{v['ratio_lo']:.3g}, {v['ratio_hi']:.3g}]"
        if math.isfinite(v["ratio_lo"])
        else "too few rounds"
    )
    return v["ratio"], span, str(v["verdict"])


def _training_cell(mode: str, v: training.Verdict) -> str:
    if mode == training.REFERENCE:
        return "reference"
    return f"{v.verdict}: {v.reason}"


def training_notes(summary: pd.DataFrame, verdicts: dict[str, training.Verdict]) -> list[str]:
    """The judge's margin, the seeds that missed the target, and a budget that ended while fp32
    was still improving: what each training verdict rests on (the quality study says the same)."""
    if summary.empty:
        return []
    mg = training.margin_of(summary)
    notes = [f"Margin: {mg.reason}."]
    goal, _ = training.target(summary)
    if goal is not None:
        for mode, v in verdicts.items():
            miss = training.missed(summary, mode, goal) if v.within else ""
            if mode != training.REFERENCE and miss:
                notes.append(f"{mode}: {miss}.")
    seeds = training.still_improving(summary)
    if seeds:
        last = int(summary["last_step"].max())
        notes.append(
            f"Still improving at the budget: {training.REFERENCE}'s best is at its last logged "
            f"step in seed {', '.join(map(str, sorted(seeds)))}; the training verdicts hold for "
            f"these {last} steps, not for training to convergence."
        )
    return notes


def _seed_notes(summary: pd.DataFrame, reference: str) -> list[str]:
    """Where a recipe's best values average other seeds than the reference's (a run failed)."""
    if summary.empty:
        return []
    seeds = {m: sorted(g["seed"]) for m, g in summary.groupby("mode", sort=False)}
    ref = seeds.get(reference, [])
    return [
        f"{mode}'s best value is the mean of seed {', '.join(map(str, mine))}, "
        f"{reference}'s of seed {', '.join(map(str, ref))}: the runs of the others did not finish."
        for mode, mine in seeds.items()
        if mode != reference and mine != ref
    ]


def table(run_dir: Path, cfg: dict) -> tuple[pd.DataFrame, list[str]]:
    """The recipe table and its notes."""
    rows = pd.DataFrame(results.read_rows(run_dir / results.ROWS))
    samples = {r["case_id"]: r["samples_ms"] for r in results.read_rows(run_dir / results.SAMPLES)}
    reference = (
        catalog.reference() if catalog.reference() in set(rows["mode"]) else rows["mode"].iloc[0]
    )
    fast = speed(rows, samples, reference)
    verdicts, summary, metric, why = judge_training(run_dir, rows, cfg.get("metric"))
    out = []
    for mode, g in rows.groupby("mode", sort=False):
        ok = g[g["status"] == "ok"]
        ratio, span, word = _speed_cells(fast[mode])
        best = summary[summary["mode"] == mode]["best_loss"] if len(summary) else pd.Series()
        v = verdicts[mode]
        training_cell = _training_cell(mode, v)
        if mode == reference and ok.empty:
            training_cell = word = "reference: no run finished"
        out.append(
            {
                "recipe": mode,
                "runs ok": f"{len(ok)} of {len(g)}",
                "step ms": ok["total_ms"].median() if "total_ms" in ok and len(ok) else math.nan,
                f"time × {reference}": ratio,
                "interval": span,
                "speed": word,
                "peak GiB": ok["peak_alloc_gib"].max() if "peak_alloc_gib" in ok else math.nan,
                "MFU %": ok["mfu_pct"].median() if "mfu_pct" in ok else math.nan,
                "skipped steps": ok["skipped_steps"].sum() if "skipped_steps" in ok else math.nan,
                f"best {metric or 'metric'}": best.mean() if len(best) else math.nan,
                "training": training_cell,
            }
        )
    notes = [
        f"Speed: the rounds verdict of each recipe's step times against {reference}'s, "
        f"{WINDOWS} windows of each run's timed steps per seed (time × {reference} below 1 is "
        "faster; `unclear`: the data cannot decide). `step ms` is the median of the runs' median "
        f"steps; `time × {reference}` and its interval are the ratio of geometric means over "
        "every window of every run, so where runs scatter the two need not agree.",
        f"Training: each recipe against {training.REFERENCE} over the seeds on {why}."
        if metric is not None
        else f"Training: not judged: {why}.",
        *training_notes(summary, verdicts),
        *_seed_notes(summary, reference),
    ]
    # The probe's own notes on what it could not measure (`–` in the table), each once.
    said = rows[rows["status"] == "ok"]["error"].dropna() if "error" in rows else []
    for note in dict.fromkeys(n for text in said for n in str(text).split("; ") if n):
        notes.append(f"`–`: {note}.")
    if "census_ms" in rows:
        census = rows["census_ms"].dropna()
        if len(census):
            notes.append(
                f"The underflow census took {census.median():.3g} ms per census (the median over "
                "the runs; the steps it ran in are not timed)."
            )
    return pd.DataFrame(out), notes


def render(run_dir: Path) -> str:
    env = results.read_env(run_dir)
    cfg = env.get("config", {})
    df, notes = table(run_dir, cfg)
    rows = pd.DataFrame(results.read_rows(run_dir / results.ROWS))
    lines = [
        f"# Recipes for `{' '.join(cfg.get('script', []))}`",
        "",
        f"Each recipe ran once per seed ({', '.join(map(str, cfg.get('seeds', [])))}), in "
        f"interleaved rounds, on {env.get('gpu') or env.get('device')}.",
        "",
        markdown(df),
        "",
        *[f"- {n}" for n in notes],
        "",
    ]
    bad = rows[rows["status"] != "ok"]
    if len(bad):
        lines += ["## Runs that did not finish", ""]
        for _, r in bad.iterrows():
            lines += [f"**{r['mode']}, seed {r['seed']}: {r['status']}**", "", "```",
                      str(r.get("error", "")), "```", ""]  # fmt: skip
    return "\n".join(lines)


def failed_runs(run_dir: Path) -> int:
    """How many runs ended without a row of their own: failed, timed out, or in error."""
    rows = results.read_rows(Path(run_dir) / results.ROWS)
    return sum(r.get("status") not in ("ok", "unsupported") for r in rows)


def write(run_dir: Path) -> Path:
    path = Path(run_dir) / RECIPES_MD
    path.write_text(render(Path(run_dir)))
    return path
