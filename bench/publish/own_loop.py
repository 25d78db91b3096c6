"""The recipe table of a user's own run (`ampbench recipes`): recipes.md in the driver's folder,
from its rows, samples and each run's probe files alone (no torch).

- **Speed** is the driver's verdict (`bench.verdicts.driver.speed`: the rounds judge `compare`,
  `ab` and `history` give, one observation per run, the median of its timed steps) of each
  recipe's step times against the reference's; shown here as `× fp32`, fp32's time over the
  recipe's (above 1 is faster), the way every other table of ampbench shows a speed-up.
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
from bench.verdicts import driver, training
from bench.verdicts.defaults import MIN_ROUNDS

RECIPES_MD = "recipes.md"
METRICS = ("val_loss", "eval_loss", "loss")
"""The metrics the training judge reads when none is named, the first that every run logged."""


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


def speed(rows: pd.DataFrame, samples: dict, reference: str) -> dict[str, dict]:
    """mode -> the driver's speed verdict against `reference` (`bench.verdicts.driver`), from
    each finished run's timed step times."""
    ok = rows[rows["status"] == "ok"]
    runs = {mode: [] for mode in rows["mode"].unique()}
    for mode, cid in zip(ok["mode"], ok["case_id"], strict=True):
        runs[mode].append(samples.get(cid, {}).get("total") or [])
    return driver.speed(runs, reference)


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
    """(× the reference: its time over the recipe's, the interval of that, the verdict)."""
    if "ratio" not in v:
        return math.nan, "", v["verdict"] + (f" ({v['why']})" if v.get("why") else "")
    # The verdict's ratio is the recipe's time over the reference's; the table shows its
    # inverse, a speed-up, as the run table printed beside it and the main report do.
    span = (
        f"[{1 / v['ratio_hi']:.4g}, {1 / v['ratio_lo']:.4g}]"
        if math.isfinite(v["ratio_lo"])
        else "–"
    )
    word = str(v["verdict"]) + (f" ({v['why']})" if v.get("why") else "")
    return 1 / v["ratio"], span, word


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
                f"× {reference}": ratio,
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
        f"`× {reference}`: {reference}'s step time over the recipe's, above 1 is faster (the "
        f"run table the command prints and report.md read the same way, each run against "
        f"{reference}'s run at its seed).",
        f"Speed: the rounds verdict of each recipe's runs against {reference}'s, one observation "
        f"per run (the median of its timed steps); `unclear`: the data cannot decide, and with "
        f"fewer than {MIN_ROUNDS} runs a recipe it is always `unclear` (`–` in interval). "
        f"`step ms` is the median of the runs' medians; `× {reference}` and its interval are "
        "the ratio of the runs' geometric means, so where runs scatter the two need not agree.",
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
