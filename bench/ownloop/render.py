"""The mode table of a user's own run (`ampbench sweep`): sweep.md in the driver's folder, from
its rows, samples and probe files alone. Speed is `bench.verdicts.driver.speed_over_looks`'s
verdict, shown as `× fp32`; training is `bench.verdicts.training`'s judge on the metric the runs
log."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from bench.ground import catalog
from bench.ownloop import looks
from bench.store import results
from bench.store.run_env import RunEnv
from bench.text.tables import markdown
from bench.verdicts import driver, many_to_one, rounds, sequential, training
from bench.verdicts.defaults import MIN_EFFECT

SWEEP_MD = "sweep.md"
OLD_SWEEP_MD = "recipes.md"
"""The table's name in a folder the driver wrote while it was `ampbench recipes`."""


def alone(rows: pd.DataFrame) -> pd.DataFrame:
    """The runs timed alone (`bench.ownloop.looks.timed_alone`): the only ones whose step
    times are the mode's."""
    return looks.timed_alone(rows)


def judge_training(
    run_dir: Path, rows: pd.DataFrame, asked: str | None, drop: float = training.LEARNED_DROP
) -> tuple[dict[str, training.Verdict], pd.DataFrame, str | None, str]:
    """mode -> the training verdict, the per-run summary, the metric and why it was chosen;
    `drop`: the drop below its value before training the run declared for fp32
    (`--expected-drop`)."""
    summary, metric, why = looks.summary(run_dir, rows, asked)
    if metric is None:
        none = training.Verdict(training.NOT_KNOWN, why)
        return {m: none for m in rows["mode"].unique()}, summary, None, why
    verdicts = {
        m: training.trains_like_fp32(summary, m, synthetic=False, drop=drop)
        for m in rows["mode"].unique()
    }
    info = results.read_env(run_dir)
    if info.get("looks"):  # a sequential study: each verdict at the look that decided it
        design = sequential.Design.from_record(info["design"])
        judged = sequential.judge_each(
            summary, list(verdicts), design, info["looks"], info["seed_order"], drop
        )
        verdicts.update({m: j.verdict for m, j in judged.items()})
    return verdicts, summary, metric, why


def _decided_by(v: dict, plan: dict | None) -> str:
    """What decided a speed verdict, or what it lacks, in a few words."""
    runs = f"{v['rounds_b']} and {v['rounds_a']} runs timed alone"
    if v["verdict"] in rounds.DECIDED:
        looks = plan["most"] - plan["first"] + 1 if plan else 1
        at = f", look {v['look']} of {looks}" if looks > 1 else ""
        return f"{runs}{at}, at level {v['level']:.2g}"
    if v.get("why"):
        return str(v["why"])
    need = v.get("needed")
    more = f"; about {need} a side would decide it" if need else ""
    return f"undecided after {runs}{more}"


def _speed_cells(v: dict, plan: dict | None = None) -> tuple[float, str, str, str]:
    """(× the reference: its time over the mode's, the interval of that, the verdict, what
    decided it or what it lacks)."""
    if "ratio" not in v:
        return math.nan, "", v["verdict"], str(v.get("why", ""))
    # The verdict's ratio is the mode's time over the reference's; the table shows its
    # inverse, a speed-up, as the run table printed beside it and the main report do.
    span = (
        f"[{1 / v['ratio_hi']:.4g}, {1 / v['ratio_lo']:.4g}]"
        if math.isfinite(v["ratio_lo"])
        else "–"
    )
    return 1 / v["ratio"], span, str(v["verdict"]), _decided_by(v, plan)


def _training_cell(mode: str, v: training.Verdict) -> str:
    if mode == training.REFERENCE:
        return "reference"
    return f"{v.verdict}: {v.reason}"


def training_notes(
    summary: pd.DataFrame,
    verdicts: dict[str, training.Verdict],
    drop: float = training.LEARNED_DROP,
    in_looks: bool = False,
) -> list[str]:
    """The judge's margin, the seeds that missed the target, and a budget that ended while fp32
    was still improving: what each training verdict rests on (the quality study says the same).
    `in_looks`: a sequential study, whose power note says what it means for its verdicts."""
    if summary.empty:
        return []
    mg = training.margin_of(summary)
    notes = [f"Margin: {mg.reason}."]
    if in_looks and not mg.enough:
        notes.append(
            "That seed count is what a study of fixed size would need to decide 80% of the "
            "time: a verdict the looks reached with fewer seeds still holds at its stated "
            "error rate (each look's level is spent for it); fewer seeds only make an "
            "undecided verdict more likely."
        )
    goal, _ = training.target(summary, drop)
    if drop != training.LEARNED_DROP:
        notes.append(
            f"Learned: {training.REFERENCE}'s best {drop:.0%} below its value before training, "
            f"as the run declared (`--expected-drop`; {training.LEARNED_DROP:.0%} otherwise)."
        )
    resumed = training.resumed(summary)
    if resumed:
        notes.append(
            f"{training.REFERENCE}'s seed {', '.join(map(str, resumed))} resumed from a "
            "checkpoint (the framework's global step above 0 when it began): not judged on "
            "whether it learned."
        )
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


def packing_notes(rows: pd.DataFrame) -> list[str]:
    """Which runs gave which figure: step times from the runs alone, training from all."""
    if "ran" not in rows or not (rows["ran"] == "packed").any():
        if "timed_look" in rows and rows["timed_look"].isna().any():
            return [
                "Every run ran alone, one at a time; speed, `step ms` and `MFU %` are from the "
                "runs the speed rule timed (`runs alone`; `timed_look` in rows.jsonl), the "
                "training verdicts from all."
            ]
        return ["Every run ran alone: speed, `step ms` and `MFU %` are from all of them."]
    seeds = {k: sorted(set(g["seed"].astype(int))) for k, g in rows.groupby("ran")}
    packed = rows[rows["ran"] == "packed"]
    return [
        f"Speed, `step ms` and `MFU %` are from the runs timed alone (`runs alone`: seed "
        f"{', '.join(map(str, seeds.get('alone', [])))}); the other runs (seed "
        f"{', '.join(map(str, seeds['packed']))}) ran {int(packed['side_by_side'].max())} side by "
        "side, and give the training verdicts only, with the runs alone (`ran` in rows.jsonl)."
    ]


def test_of(info: RunEnv) -> str:
    """The training rule's test, as the folder's design says (one look: Welch's t)."""
    paired = bool(info.get("looks")) and sequential.Design.from_record(info["design"]).paired
    return training.TEST_NAMES[paired]


def looks_notes(info: RunEnv, verdicts: dict[str, training.Verdict]) -> list[str]:
    """A sequential study's looks, why they ended, and the seeds an undecided mode needs."""
    if not info.get("looks"):
        return []
    d = info["design"]
    notes = [
        f"Seeds in looks at {', '.join(map(str, info['looks']))} seeds a mode (cap "
        f"{d['max_seeds']}), ended by {info.get('looks_ended', 'an interruption')}: each "
        f"training verdict at the look that decided it, its level spent over the looks "
        f"({d['spending']}), so the {d['alpha']:.0%} error rate holds over all of them; the "
        f"test: {test_of(info)}."
    ]
    for mode, v in verdicts.items():
        if v.verdict == training.NOT_KNOWN and v.needed:
            notes.append(f"{mode}: training undecided; it would need {v.needed} seeds a side.")
    return notes


def tf32_note(rows: pd.DataFrame) -> list[str]:
    """What TF32 the autocast modes ran with: the probe sets it for the float32 modes only (off
    for fp32, on for tf32), so an autocast row ran with the script's own setting, which each
    row records (`tf32_matmul`; docs/own-loop.md, "What the probe changes in your process")."""
    if "tf32_matmul" not in rows:
        return []
    said = []
    for mode, g in rows[rows["status"] == "ok"].groupby("mode", sort=False):
        card = catalog.card(mode)
        seen = set(g["tf32_matmul"].dropna().astype(bool))
        if card is None or card.kind != "autocast" or not seen:
            continue
        said.append(f"{mode} {'on' if seen == {True} else 'off' if seen == {False} else 'mixed'}")
    if not said:
        return []
    return [
        "TF32: the probe sets it for the float32 modes only (fp32 off, tf32 on); the autocast "
        f"modes ran with the script's own setting ({', '.join(said)})."
    ]


def speed_notes(info: RunEnv, fast: dict[str, dict]) -> list[str]:
    """How the speed verdicts were reached: the rule, its error over the modes and the timed
    looks, and the timed runs an undecided mode would need."""
    plan = info.get("speed_plan")
    over = (
        f"over the modes and the timed looks (up to {plan['most']} runs alone a mode, one more "
        f"a look while its speed is undecided; alpha spent by Pocock's function, as for "
        f"training)"
        if plan and plan["most"] > plan["first"]
        else "over the modes (one look)"
    )
    notes = [
        f"Speed: {many_to_one.PROCEDURE}; one observation per run timed alone (the median of "
        f"its timed steps). The chance of any false `faster` or `slower` is held at "
        f"{1 - (plan or {}).get('confidence', 0.95):.0%} {over}. "
        f"`same`: the interval within ±{info.get('min_effect', MIN_EFFECT):.0%}; `unclear`: not "
        "decided yet, and always "
        f"with fewer than {driver.MIN_RUNS} runs a side (`–` in interval). `step ms` is the "
        "median of the runs' medians; `× fp32` and its interval are the ratio of the runs' "
        "geometric means, so where runs scatter the two need not agree."
    ]
    for mode, v in fast.items():
        if v.get("verdict") == "unclear" and v.get("needed"):
            notes.append(
                f"{mode}: speed undecided; about {v['needed']} runs timed alone a side would "
                "decide it."
            )
    return notes


def _seed_notes(summary: pd.DataFrame, reference: str, rows: pd.DataFrame) -> list[str]:
    """Where a mode's best values average other seeds than the reference's: a run that did not
    finish, or seeds the mode never ran (its looks stopped once its verdicts were decided)."""
    if summary.empty:
        return []
    seeds = {m: sorted(g["seed"]) for m, g in summary.groupby("mode", sort=False)}
    ref = seeds.get(reference, [])
    notes = []
    for mode, mine in seeds.items():
        if mode == reference or mine == ref:
            continue
        ran = set(rows[rows["mode"] == mode]["seed"].astype(int))
        failed = sorted(ran - set(mine))
        why = [f"seed {', '.join(map(str, failed))} did not finish"] if failed else []
        if set(ref) - ran:
            why.append("the looks stopped adding its seeds once it was decided")
        notes.append(
            f"{mode}'s best value is the mean of seed {', '.join(map(str, mine))}, "
            f"{reference}'s of seed {', '.join(map(str, ref))}: {'; '.join(why)}."
        )
    return notes


def table(run_dir: Path, cfg: dict) -> tuple[pd.DataFrame, list[str]]:
    """The mode table and its notes."""
    rows = results.frame(results.read_rows(run_dir / results.ROWS))
    reference = (
        catalog.reference() if catalog.reference() in set(rows["mode"]) else rows["mode"].iloc[0]
    )
    fast = looks.speed(run_dir, rows, reference)
    info = results.read_env(run_dir)
    drop = float(cfg.get("expected_drop") or training.LEARNED_DROP)
    verdicts, summary, metric, why = judge_training(run_dir, rows, cfg.get("metric"), drop)
    out = []
    for mode, g in rows.groupby("mode", sort=False):
        ok = g[g["status"] == "ok"]
        timed = alone(ok)
        step_ms = timed["total_ms"].median() if "total_ms" in ok and len(timed) else math.nan
        ratio, span, word, by = _speed_cells(fast[mode], info.get("speed_plan"))
        best = summary[summary["mode"] == mode]["best_loss"] if len(summary) else pd.Series()
        v = verdicts[mode]
        training_cell = _training_cell(mode, v)
        if mode == reference and ok.empty:
            training_cell = word = "reference: no run finished"
        out.append(
            {
                "mode": mode,
                "runs ok": f"{len(ok)} of {len(g)}",
                "runs alone": len(timed),
                "step ms": step_ms,
                f"× {reference}": ratio,
                "interval": span,
                "speed": word,
                "speed from": by,
                "peak GiB": ok["peak_alloc_gib"].max() if "peak_alloc_gib" in ok else math.nan,
                "MFU %": timed["mfu_pct"].median() if "mfu_pct" in ok else math.nan,
                "skipped steps": ok["skipped_steps"].sum() if "skipped_steps" in ok else math.nan,
                f"best {metric or 'metric'}": best.mean() if len(best) else math.nan,
                "training": training_cell,
            }
        )
    notes = [
        f"`× {reference}`: {reference}'s step time over the mode's, above 1 is faster (the "
        f"run table the command prints and report.md read the same way, each run against "
        f"{reference}'s run at its seed).",
        *speed_notes(info, fast),
        f"Training: each mode against {training.REFERENCE} over the seeds on {why}, by "
        f"{test_of(info)}."
        if metric is not None
        else f"Training: not judged: {why}.",
        *packing_notes(rows),
        *looks_notes(info, verdicts),
        *training_notes(summary, verdicts, drop, bool(info.get("looks"))),
        *_seed_notes(summary, reference, rows),
        *tf32_note(rows),
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


def _which_alone(rows: pd.DataFrame, cfg: dict) -> str:
    """How the runs ran, as the rows say: every one alone (one at a time, or a folder from
    before packing), or the first seeds alone and the others side by side."""
    if "ran" not in rows or (rows["ran"] != "packed").all():
        return "each alone, in interleaved rounds"
    return f"the first {cfg.get('timed_seeds')} alone in interleaved rounds, the others packed"


def render(run_dir: Path) -> str:
    env = results.read_env(run_dir)
    cfg = env.get("config", {})
    df, notes = table(run_dir, cfg)
    rows = results.frame(results.read_rows(run_dir / results.ROWS))
    lines = [
        f"# Modes for `{' '.join(cfg.get('script', []))}`",
        "",
        f"Each mode ran once per seed ({', '.join(map(str, sorted(set(rows['seed']))))}), "
        f"{_which_alone(rows, cfg)}, on {env.get('gpu') or env.get('device')}.",
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


def written(run_dir: Path) -> Path | None:
    """The mode table a driver's folder holds: sweep.md, or an older folder's recipes.md;
    None where it has neither (not a driver's folder, or one still running)."""
    for name in (SWEEP_MD, OLD_SWEEP_MD):
        if (Path(run_dir) / name).is_file():
            return Path(run_dir) / name
    return None


def write(run_dir: Path) -> Path:
    """Write the mode table into `run_dir`: over the one it holds, else as sweep.md."""
    path = written(run_dir) or Path(run_dir) / SWEEP_MD
    path.write_text(render(Path(run_dir)))
    return path
