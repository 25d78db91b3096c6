"""A time-to-quality study's report: what the data and the runs were, the target, each recipe's
time to it and held-out losses over seeds, the verdicts (`bench.verdicts.training`), the
GradScaler check, the published anchor where there is one, and the loss curves. From the
folder's files alone (`bench.quality.tables`); pandas and matplotlib, no torch."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from matplotlib import ticker
from matplotlib.figure import Figure

from bench.publish import figures
from bench.publish.prose import figure, joined
from bench.publish.tables import markdown, number
from bench.quality import tables
from bench.quality.config import QualityConfig
from bench.recipes import catalog
from bench.store import results
from bench.verdicts import training as rules

CURVES_PNG = "curves.png"
DASH = "–"


def loss(x: float) -> str:
    """A loss to 4 significant digits: recipes differ in the third."""
    return number(float(x), 4)


def _range(values: pd.Series, show=figure) -> str:
    values = values.dropna()
    if values.empty:
        return DASH
    if len(values) == 1 or values.min() == values.max():
        return show(values.iloc[0])
    return f"{show(values.mean())} ({show(values.min())}–{show(values.max())})"


def study(run_dir: Path) -> dict:
    """Everything the report and the README read of a study: its config, tables, per-run
    summary, target, verdicts and times to the target."""
    env = results.read_env(run_dir)
    cfg = QualityConfig.from_record(env["quality_config"])
    t = tables.load(run_dir)
    summary = (
        rules.per_run(t["curves"], t["runs"])
        if len(t["curves"])
        else pd.DataFrame(columns=["mode", "seed", "status", "best_loss"])
    )
    goal, goal_why = rules.target(summary) if len(summary) else (None, "no run finished")
    synthetic = False  # every source of `bench.data` is real data
    verdicts = {
        m: rules.trains_like_fp32(summary, m, synthetic=synthetic)
        for m in cfg.modes
        if m in set(summary["mode"])
    }
    scaled, bare = catalog.fp16_pair()
    scaler = None
    if scaled in cfg.modes or bare in cfg.modes:
        scaler = rules.scaler_needed(t["checks"], summary, scaled, bare, synthetic=synthetic)
    reached = rules.steps_to(t["curves"], goal) if goal is not None else pd.DataFrame()
    return {
        "env": env, "cfg": cfg, "tables": t, "summary": summary, "target": goal,
        "target_why": goal_why, "verdicts": verdicts, "scaler": scaler, "reached": reached,
    }  # fmt: skip


def _times(s: dict) -> pd.DataFrame:
    """Per mode with a step time and every seed at the target: the interval of its time to the
    target in seconds (the seeds' range of steps × the step time's p10–p90) and its mean."""
    timing = s["tables"]["timing"]
    ok = timing[timing["status"] == "ok"].set_index("mode")
    rows = []
    for mode, g in s["reached"].groupby("mode", sort=False) if len(s["reached"]) else ():
        if mode not in ok.index or g["steps"].isna().any():
            continue
        t = ok.loc[mode]
        rows.append(
            {
                "mode": mode,
                "mean_s": g["steps"].mean() * t["step_ms"] / 1e3,
                "low_s": g["steps"].min() * t["step_ms_p10"] / 1e3,
                "high_s": g["steps"].max() * t["step_ms_p90"] / 1e3,
            }
        )
    return pd.DataFrame(rows, columns=["mode", "mean_s", "low_s", "high_s"])


def recipe_table(s: dict) -> tuple[pd.DataFrame, list[str]]:
    """One row per recipe, and the notes that say why a cell is `–`."""
    cfg, summary, timing = s["cfg"], s["summary"], s["tables"]["timing"].set_index("mode")
    times = _times(s).set_index("mode")
    notes, rows = [], []
    text = cfg.data != "digits"
    for mode in cfg.modes:
        mine = summary[summary["mode"] == mode]
        ran = s["tables"]["runs"]
        untrained = (
            len(cfg.seeds) - int((ran["mode"] == mode).sum()) if len(ran) else len(cfg.seeds)
        )
        if untrained:
            notes.append(f"{mode}: {untrained} of {len(cfg.seeds)} seeds not trained yet")
        status = timing.loc[mode, "status"] if mode in timing.index else "not timed"
        if status != "ok":
            why = timing.loc[mode, "error"] if mode in timing.index else "it was not timed"
            notes.append(f"{mode}: {status}, {why}")
        reached = s["reached"][s["reached"]["mode"] == mode] if len(s["reached"]) else None
        steps = _range(reached["steps"]) if reached is not None and len(reached) else DASH
        if reached is not None and len(reached) and reached["steps"].isna().any():
            missed = int(reached["steps"].isna().sum())
            steps = f"{missed} of {len(reached)} seeds missed"
        v = s["verdicts"].get(mode)
        row = {
            "recipe": mode,
            "step ms": figure(timing.loc[mode, "step_ms"]) if status == "ok" else DASH,
            "steps to target": steps,
            "s to target": figure(times.loc[mode, "mean_s"]) if mode in times.index else DASH,
            "best held-out loss": _range(mine["best_loss"], loss) if len(mine) else DASH,
            "final held-out loss": _range(mine["final_loss"], loss) if len(mine) else DASH,
        }
        if not text:
            row["best accuracy"] = _range(mine["best_accuracy"]) if len(mine) else DASH
        row["seeds"] = str(int((mine["status"] == "ok").sum())) if len(mine) else "0"
        row["diverged"] = str(int((mine["status"] == "diverged").sum())) if len(mine) else DASH
        row["skipped steps"] = _range(mine["skipped_steps"]) if len(mine) else DASH
        row["vs fp32"] = "reference" if mode == "fp32" else v.verdict if v is not None else DASH
        rows.append(row)
    if s["target"] is None:
        notes.append(f"steps and time to target: no target ({s['target_why']})")
    if any("not trained yet" in n for n in notes):
        notes.append("the study is unfinished: `ampbench quality --resume FOLDER` trains the rest")
    return pd.DataFrame(rows), notes


def _verdict_lines(s: dict) -> list[str]:
    lines = [
        f"- **{m}**: {v.verdict} ({v.reason})." for m, v in s["verdicts"].items() if m != "fp32"
    ]
    like = [m for m, v in s["verdicts"].items() if v.verdict == rules.LIKE]
    times = _times(s)
    times = times[times["mode"].isin(like)]
    # A recipe with a seed that missed the target has no time to it: it cannot be ranked, and
    # the sentence says so rather than let the ranked ones read as faster than it.
    unranked = [m for m in like if m not in set(times["mode"])]
    besides = (
        f" Not ranked: {joined(unranked)}, which {'train' if len(unranked) > 1 else 'trains'} "
        "like fp32 but not every seed reached the target."
        if unranked
        else ""
    )
    if set(times["mode"]) == {rules.REFERENCE}:
        # fp32 against itself ranks nothing: no other recipe is known to train like it in time.
        t = times.iloc[0]
        lines.append(
            f"- **Fastest to the target**: not known: fp32 alone has a time to it "
            f"({figure(t['mean_s'])} s), since no other recipe is shown to train like fp32 with "
            f"every seed at the target.{besides}"
        )
    elif len(times):
        fastest, tied = rules.fastest_to_target(times)
        if tied:
            lines.append(
                f"- **Fastest to the target** among the recipes that train like fp32: tied within "
                f"noise, {joined(fastest)} (their times to the target overlap).{besides}"
            )
        else:
            t = times.set_index("mode").loc[fastest[0]]
            ahead = "ahead of every other's interval" if len(times) > 1 else "the only one timed"
            lines.append(
                f"- **Fastest to the target** among the recipes that train like fp32: "
                f"{fastest[0]}, {figure(t['mean_s'])} s ({figure(t['low_s'])}–"
                f"{figure(t['high_s'])} s over seeds and step-time spread), {ahead}.{besides}"
            )
    elif unranked:
        lines.append(f"- **Fastest to the target**: not known.{besides}")
    return lines


def _anchor(s: dict) -> list[str]:
    a = s["cfg"].anchor
    if a is None:
        return []
    mine = s["summary"][(s["summary"]["mode"] == a.mode) & (s["summary"]["status"] == "ok")]
    if mine.empty:
        return [f"**Published anchor**: {a.source}: {a.loss}; {a.mode} did not finish here."]
    mean = mine["best_loss"].mean()
    return [
        f"**Published anchor**: {a.source}: {a.loss}. Here {a.mode}'s best held-out loss is "
        f"{_range(mine['best_loss'], loss)} over {len(mine)} seeds, {mean - a.loss:+.3g} from it."
    ]


def _scaler(s: dict) -> list[str]:
    v, checks = s["scaler"], s["tables"]["checks"]
    if v is None:
        return []
    lines = ["## The GradScaler check", ""]
    if len(checks):
        worst = (
            checks.sort_values("kept_by_scaler", ascending=False)
            .groupby("step", sort=True)
            .head(3)[
                [
                    "step",
                    "seed",
                    "tensor",
                    "numel",
                    "lost_unscaled",
                    "lost_scaled",
                    "kept_by_scaler",
                ]
            ]
        )
        worst = worst.rename(
            columns={
                "lost_unscaled": "norm lost without",
                "lost_scaled": "norm lost with",
                "kept_by_scaler": "kept by the scaler",
            }
        )
        lines += [
            "The three tensors per check step whose gradient norm the scaler keeps most (shares "
            f"of float32's gradient norm; tensors under {rules.MIN_ELEMENTS} elements do not "
            "decide):",
            "",
            markdown(worst.sort_values(["step", "seed"])),
            "",
        ]
    return lines


def findings(s: dict) -> list[str]:
    """The study's results as markdown lines: the target, the anchor, the recipe table with its
    note, the verdicts and GradScaler's; the report and README.md's `quality` block show them."""
    table, notes = recipe_table(s)
    goal = (
        f"**Target**: held-out loss {loss(s['target'])} ({s['target_why']})."
        if s["target"] is not None
        else f"**Target**: none: {s['target_why']}. No recipe is judged against fp32."
    )
    scaler = s["scaler"]
    return [
        goal,
        "",
        *([*_anchor(s), ""] if s["cfg"].anchor else []),
        markdown(table),
        "",
        "Cells: mean over seeds (minimum–maximum). vs fp32: the equivalence test of the best "
        f"held-out loss (margin {rules.MARGIN_SPREAD:g} × fp32's seed spread, at least "
        f"{rules.MARGIN_FLOOR:.0%} of its mean; 90% interval by Welch's t)."
        + (f" `–`: {'; '.join(notes)}." if notes else ""),
        "",
        *_verdict_lines(s),
        *([f"- **GradScaler with float16**: {scaler.verdict}: {scaler.reason}."] if scaler else []),
    ]


def plot(s: dict, path: Path) -> None:
    curves = s["tables"]["curves"]
    fig = Figure(figsize=(10, 4.2))
    held, train = fig.subplots(1, 2)
    for mode, g in curves.groupby("mode", sort=False):
        mean = g.groupby("step")[["heldout_loss", "train_loss"]].mean()
        colour = catalog.CARDS[mode].colour if mode in catalog.CARDS else None
        held.plot(mean.index, mean["heldout_loss"], label=mode, color=colour)
        train.plot(mean.index, mean["train_loss"], label=mode, color=colour)
    for ax, title in ((held, "held-out loss"), (train, "training loss (running mean)")):
        ax.set_title(f"{title}, mean over seeds")
        ax.set_xlabel("step")
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(ticker.ScalarFormatter())  # 1.5, not 1.5×10⁰
        ax.yaxis.set_minor_formatter(ticker.ScalarFormatter())
    if s["target"] is not None:
        held.axhline(s["target"], color="black", linestyle=":", label="target")
    held.legend(fontsize=8)
    fig.tight_layout()
    figures.save(fig, path, dpi=100)


def render(run_dir: Path) -> Path:
    s = study(run_dir)
    cfg, env = s["cfg"], s["env"]
    unit = "sequences" if cfg.data != "digits" else "images"
    heldout = (
        f"the first {cfg.heldout_limit} held-out samples"
        if cfg.heldout_limit
        else "the whole held-out split"
    )
    lines = [
        f"# Time to quality: `{cfg.model}` ({cfg.preset}) on {cfg.data}",
        "",
        f"{env.get('gpu', 'cpu')}, torch {env.get('torch', '?')}, commit {env.get('commit')}.",
        "",
        f"**Data**: {env.get('data_description', cfg.data)}. **Model**: "
        f"{env.get('model_description', cfg.model)}.",
        "",
        f"**Runs**: {len(cfg.seeds)} seeds ({', '.join(map(str, cfg.seeds))}); each recipe of a "
        f"seed starts from the same weights and sees the same batches. {cfg.steps} steps of "
        f"{cfg.batch_size} {unit}; AdamW (beta2 {cfg.beta2:g}, weight decay {cfg.weight_decay:g}),"
        f" learning rate {cfg.lr:g} warmed up over {cfg.warmup} steps, cosine to {cfg.min_lr:g}; "
        f"gradients clipped at {cfg.grad_clip:g}. Held-out loss over "
        f"{heldout}"
        f" every {cfg.eval_every} steps, dropout off. Step times: each recipe's step timed alone "
        f"({cfg.timing_steps} steps after a warm-up) before training; time to target is steps × "
        "that time.",
        "",
        "## Results",
        "",
        *findings(s),
        "",
        *_scaler(s),
        "## Loss curves",
        "",
        f"![curves]({CURVES_PNG})",
        "",
    ]
    if len(s["tables"]["curves"]):
        plot(s, run_dir / CURVES_PNG)
    path = run_dir / results.REPORT
    path.write_text("\n".join(lines))
    return path
