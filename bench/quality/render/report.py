"""A time-to-quality study's report: what the data and the runs were, the target, each mode's
time to it and held-out losses over seeds, the verdicts (`bench.verdicts.training`), the
GradScaler check, the published anchor where there is one, and the loss curves. From the
folder's files alone (`bench.quality.tables`); pandas and matplotlib, no torch."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from bench.ground import catalog
from bench.quality import tables
from bench.quality.config import QualityConfig
from bench.quality.render import plot as quality_plot
from bench.quality.render import runs as quality_runs
from bench.quality.render.runs import span
from bench.store import results
from bench.text.tables import MISSING, figure, joined, markdown, number
from bench.verdicts import scaler as scaler_rule
from bench.verdicts import sequential, training

CURVES_PNG = "curves.png"


def loss(x: float) -> str:
    """A loss to 4 significant digits: modes differ in the third."""
    return number(float(x), 4)


NAMED = re.compile(r"^First: `(?P<first>[^`]+)`.*? Second: `(?P<second>[^`]+)`", re.M)


def _replica(run_dir: Path) -> tuple[str, dict] | None:
    """The other study of a `--replicate` pair (its folder's name, and its verdicts), found
    through the replication page the pair's folders hold; None without one beside it."""
    page = run_dir / quality_runs.REPLICATION
    named = NAMED.search(page.read_text()) if page.is_file() else None
    if named is None:
        return None
    other = next((n for n in named.groups() if n != run_dir.name), None)
    if other is None or not (run_dir.parent / other / results.ENV).is_file():
        return None
    return other, study(run_dir.parent / other, paired=False)["verdicts"]


def study(run_dir: Path, *, paired: bool = True) -> dict:
    """Everything the report and the README read of a study, in one dict; `paired`: with the
    verdicts of its replication where the folder names one."""
    env = results.read_env(run_dir)
    cfg = QualityConfig.from_record(env["quality_config"])
    t = tables.load(run_dir)
    summary = (
        training.per_run(t["curves"], t["runs"])
        if len(t["curves"])
        else pd.DataFrame(columns=["mode", "seed", "status", "best_loss"])
    )
    goal, goal_why = training.target(summary) if len(summary) else (None, "no run finished")
    synthetic = False  # every source of `bench.data` is real data
    looks = [int(n) for n in env.get("looks", [])]
    judged = {}
    design = sequential.planned(len(cfg.seeds), cfg.max_seeds, env.get("design"))
    if design is not None and looks:  # each mode at the look that decided it (or the last)
        judged = {
            m: sequential.judge(summary, m, design, looks, cfg.seed_order(), synthetic=synthetic)
            for m in cfg.modes
            if m in set(summary["mode"]) and m != training.REFERENCE
        }
    verdicts = {
        m: judged[m].verdict
        if m in judged
        else training.trains_like_fp32(summary, m, synthetic=synthetic)
        for m in cfg.modes
        if m in set(summary["mode"])
    }
    scaled, bare = catalog.fp16_pair()
    scaler = None
    if scaled in cfg.modes or bare in cfg.modes:
        scaler = scaler_rule.scaler_needed(t["checks"], summary, scaled, bare, synthetic=synthetic)
    reached = training.steps_to(t["curves"], goal) if goal is not None else pd.DataFrame()
    margin = training.margin_of(summary) if len(summary) else None
    improving = training.still_improving(summary) if len(summary) else []
    return {
        "env": env, "cfg": cfg, "tables": t, "summary": summary, "target": goal,
        "target_why": goal_why, "verdicts": verdicts, "scaler": scaler, "reached": reached,
        "margin": margin, "improving": improving, "looks": looks, "judged": judged,
        "design": design,
        "replica": _replica(run_dir) if paired else None,
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
                "noisy": t.get("step_ms_iqr", 0.0) > training.NOISY_IQR_OVER_MEDIAN * t["step_ms"],
                "iqr_share": t.get("step_ms_iqr", float("nan")) / t["step_ms"],
            }
        )
    return pd.DataFrame(rows, columns=["mode", "mean_s", "low_s", "high_s", "noisy", "iqr_share"])


def _cell(v: training.Verdict | None) -> str:
    """The table's verdict: the word, shortened where the line under the table says it whole."""
    if v is None:
        return MISSING
    short = {training.WITHIN_WORSE: "measurably worse, within", training.WITHIN_BETTER:
             "measurably better, within"}  # fmt: skip
    return short.get(v.verdict, v.verdict)


def mode_table(s: dict) -> tuple[pd.DataFrame, list[str]]:
    """One row per mode, and the notes that say why a cell is `–`."""
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
        steps = span(reached["steps"]) if reached is not None and len(reached) else MISSING
        if reached is not None and len(reached) and reached["steps"].isna().any():
            missed = int(reached["steps"].isna().sum())
            steps = f"{missed} of {len(reached)} seeds missed"
        v = s["verdicts"].get(mode)
        row = {
            "mode": mode,
            "step ms": figure(timing.loc[mode, "step_ms"]) if status == "ok" else MISSING,
            "steps to target": steps,
            "s to target": figure(times.loc[mode, "mean_s"]) if mode in times.index else MISSING,
            "best held-out loss": span(mine["best_loss"], loss) if len(mine) else MISSING,
            "final held-out loss": span(mine["final_loss"], loss) if len(mine) else MISSING,
        }
        if not text:
            row["best accuracy"] = span(mine["best_accuracy"]) if len(mine) else MISSING
        row["seeds"] = str(int((mine["status"] == "ok").sum())) if len(mine) else "0"
        row["diverged"] = str(int((mine["status"] == "diverged").sum())) if len(mine) else MISSING
        row["skipped steps"] = span(mine["skipped_steps"]) if len(mine) else MISSING
        row["vs fp32"] = "reference" if mode == "fp32" else _cell(v)
        rows.append(row)
    if s["target"] is None:
        notes.append(f"steps and time to target: no target ({s['target_why']})")
    if any("not trained yet" in n for n in notes):
        notes.append("the study is unfinished: `ampbench quality --resume FOLDER` trains the rest")
    return pd.DataFrame(rows), notes


def _verdict_lines(s: dict) -> list[str]:
    lines = []
    for m, v in s["verdicts"].items():
        if m == training.REFERENCE:
            continue
        goal = s.get("target")
        miss = training.missed(s["summary"], m, goal) if v.within and goal is not None else ""
        said = f"{v.verdict} ({v.reason}"
        if v.verdict in (training.WITHIN_WORSE, training.WITHIN_BETTER):
            # The issue's own wording: the margin's size, then the gap with its share.
            word = v.verdict.replace("the margin", f"the {training.MARGIN_SHARE:.0%} margin")
            said = f"{word}: {training.size(v.gap, s['margin'].reference_mean)} ({v.reason}"
        lines.append(f"- **{m}**: {said}{'; ' + miss if miss else ''}).")
    within = [m for m, v in s["verdicts"].items() if v.within]
    times = _times(s)
    times = times[times["mode"].isin(within)]
    # A mode with a seed that missed the target has no time to it: it cannot be ranked, and
    # the sentence says so rather than let the ranked ones read as faster than it.
    unranked = [m for m in within if m not in set(times["mode"]) and m != training.REFERENCE]
    besides = (
        f" Not ranked: {joined(unranked)}, within the margin but with a seed that did not reach "
        "the target (named above)."
        if unranked
        else ""
    )
    head = "- **Fastest to the target** among every mode within the margin"
    if set(times["mode"]) == {training.REFERENCE}:
        # fp32 against itself ranks nothing: no other mode is known to train like it in time.
        t = times.iloc[0]
        lines.append(
            f"- **Fastest to the target**: not known: fp32 alone has a time to it "
            f"({figure(t['mean_s'])} s), since no other mode is shown to train like fp32 with "
            f"every seed at the target.{besides}"
        )
    elif len(times):
        fastest = training.fastest_to_target(times)
        if fastest.tie:
            lines.append(
                f"{head}: tied within noise, {joined(list(fastest.modes))} ({fastest.reason})."
                f"{besides}"
            )
        else:
            t = fastest.first
            why = (
                "the only one with every seed at the target"
                if fastest.reason == "the only row"
                else fastest.reason
            )
            lines.append(f"{head}: {t['mode']}, {figure(t['mean_s'])} s ({why}).{besides}")
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
        f"{span(mine['best_loss'], loss)} over {len(mine)} seeds, {mean - a.loss:+.3g} from it."
    ]


def _scaler(s: dict) -> list[str]:
    v, checks = s["scaler"], s["tables"]["checks"]
    if v is None:
        return []
    lines = ["## The GradScaler check", ""]
    if len(checks):
        names = {"lost_unscaled": "norm lost without", "lost_scaled": "norm lost with",
                 "kept_by_scaler": "kept by the scaler",
                 "zero_unscaled": "elements to zero without",
                 "subnormal_unscaled": "elements subnormal without"}  # fmt: skip
        shown = ["step", "seed", "tensor", "numel", *names]
        worst = checks.sort_values("kept_by_scaler", ascending=False).groupby("step").head(3)
        measured = "zero_unscaled" in checks and checks["zero_unscaled"].notna().any()
        elements = (
            "; elements: the share of its non-zero elements float16 flushes to zero, and the share "
            "it keeps as subnormals (at reduced precision, not lost)"
            if measured
            else "; `–`: this study's check did not count the elements that flush to zero apart "
            "from those that turn subnormal"
        )
        lines += [
            "The three tensors per check step whose gradient norm the scaler keeps most (shares "
            "of float32's gradient norm, ||g over the flushed elements|| / ||g||; more than "
            f"{scaler_rule.FLUSHED_NORM_LIMIT:.0%} kept decides; tensors under "
            f"{training.MIN_ELEMENTS} elements do not decide{elements}):",
            "",
            markdown(
                worst.reindex(columns=shown).rename(columns=names).sort_values(["step", "seed"])
            ),
            "",
        ]
    return lines


def step_named(s: dict) -> str:
    """Which step the study timed: not the timing harness's (docs/zoo.md times that one)."""
    return (
        f"step ms: this study's own eager step (clipped at {s['cfg'].grad_clip:g} after "
        "unscaling, with dropout), timed alone; for speed, read the timing harness's step "
        "(docs/zoo.md), which may order modes otherwise"
    )


def findings(s: dict) -> list[str]:
    """The study's results as markdown lines (the report's and the README's `quality` block):
    the margin, target, anchor, mode table, the verdicts and GradScaler's."""
    table, notes = mode_table(s)
    goal = (
        f"**Target**: held-out loss {loss(s['target'])} ({s['target_why']})."
        if s["target"] is not None
        else f"**Target**: none: {s['target_why']}. No mode is judged against fp32."
    )
    mg, scaler = s["margin"], s["scaler"]
    margin = (
        [f"**Margin**: {mg.reason}.{quality_runs.extra_seeds(s)}", ""] if mg is not None else []
    )
    seeds, steps = s["improving"], s["cfg"].steps
    improving = (
        [
            f"**Still improving at the budget**: fp32's best held-out loss is at its last "
            f"evaluation (step {steps}) in {len(seeds)} of {len(s['cfg'].seeds)} seeds "
            f"(seed {', '.join(map(str, sorted(seeds)))}); every verdict here holds for "
            f"{steps} steps, not for training to convergence.",
            "",
        ]
        if seeds
        else []
    )
    return [
        quality_runs.evidence(s),
        "",
        *margin,
        *quality_runs.looks(s),
        *quality_runs.reruns(s),
        goal,
        "",
        *improving,
        *([*_anchor(s), ""] if s["cfg"].anchor else []),
        markdown(table),
        "",
        "Cells: mean over seeds (minimum–maximum). vs fp32: the equivalence test of the best "
        "held-out loss against the margin ("
        + (
            "each mode at the level of the look that decided it, by "
            + (
                training.TEST_NAMES[True]
                if s["design"].paired
                else "Welch's t at the degrees of freedom of the smaller side"
            )
            + "; Looks above"
            if s["env"].get("design") and s["design"] is not None
            else "90% interval by Welch's t"
        )
        + "); measurably worse, within: the interval inside the margin, not holding zero. "
        f"{step_named(s)}.{quality_runs.final_named(s['tables']['runs'])}"
        + (f" `–`: {'; '.join(notes)}." if notes else ""),
        "",
        *_verdict_lines(s),
        *([f"- **GradScaler with float16**: {scaler.verdict}: {scaler.reason}."] if scaler else []),
    ]


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
        f"{env.get('gpu', 'cpu')}, torch {env.get('torch', '?')}, "
        f"{quality_runs.commits(env, s['tables']['runs'])}.",
        "",
        f"**Data**: {env.get('data_description', cfg.data)}. **Model**: "
        f"{env.get('model_description', cfg.model)}.",
        "",
        f"**Runs**: {len(cfg.seeds)} seeds ({', '.join(map(str, cfg.seeds))}); each mode of a "
        f"seed starts from the same weights and sees the same batches. {cfg.steps} steps of "
        f"{cfg.batch_size} {unit}; AdamW (beta2 {cfg.beta2:g}, weight decay {cfg.weight_decay:g}),"
        f" learning rate {cfg.lr:g} warmed up over {cfg.warmup} steps, cosine to {cfg.min_lr:g}; "
        f"gradients clipped at {cfg.grad_clip:g}.{quality_runs.stopping(cfg, s['tables']['runs'])} "
        "Held-out loss over "
        f"{heldout}"
        f" every {cfg.eval_every} steps, dropout off. Step times: each mode's step timed alone "
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
        quality_plot.plot(s, run_dir / CURVES_PNG)
    path = run_dir / results.REPORT
    path.write_text("\n".join(lines))
    return path
