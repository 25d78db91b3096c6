"""Comparing two sides case by case from their rounds (`bench.verdicts.sides`), judged by
`bench.verdicts.rounds.judge_rounds`: the ratio is B's step time over A's (below 1: B is faster).
docs/comparing.md explains the verdicts and why rounds of one process cannot show process drift."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from bench.faults import UsageError
from bench.publish import compare_memory
from bench.store import paths, results
from bench.text import tables
from bench.verdicts import memory, rounds, sides
from bench.verdicts.defaults import CONFIDENCE, MIN_EFFECT

ENV_FIELDS = ("gpu", "driver", "torch", "cuda", "cudnn", "tf32_matmul", "tf32_cudnn")
"""Environment fields that change step times; a difference between the runs is warned about."""


@dataclass(frozen=True, kw_only=True)
class Pair:
    """Compare across one axis: A's rows where `axis == a`, against B's where `axis == b`."""

    axis: str
    a: str
    b: str

    @classmethod
    def parse(cls, text: str) -> Pair:
        axis, sep, values = text.partition("=")
        a, sep2, b = values.partition(":")
        if not (sep and sep2 and axis and a and b):
            raise ValueError(f"--pair wants AXIS=A_VALUE:B_VALUE, got {text!r}")
        if axis not in results.axes():
            raise ValueError(f"--pair axis {axis!r} is not one of {', '.join(results.axes())}")
        return cls(axis=axis, a=a, b=b)


def env_differences(env_a: dict, env_b: dict) -> list[str]:
    """One line per environment field that differs, naming the field and both values."""
    return [
        f"{field}: {env_a.get(field)!r} in A, {env_b.get(field)!r} in B"
        for field in ENV_FIELDS
        if env_a.get(field) != env_b.get(field)
    ]


def same_folder(run_a: Path, run_b: Path) -> bool:
    """Whether A and B name one folder: nothing to compare, unless `pair` compares within it."""
    return Path(run_a).resolve() == Path(run_b).resolve()


def compare(
    run_a: Path,
    run_b: Path,
    *,
    pair: Pair | None = None,
    min_effect: float = MIN_EFFECT,
    confidence: float = CONFIDENCE,
    statistic: str = "median",
    looks: int = 1,
    memory_tolerance: memory.Tolerance = memory.DEFAULT,
) -> pd.DataFrame:
    """One row per matched case: its medians, the rounds' verdict and figures as
    `bench.verdicts.rounds.judge_rounds` gives them, the rounds and their unit per side, and the
    memory verdict (`compare_memory.RAW`). `looks`: the looks `ab`'s stopping rule made."""
    side_a, side_b = sides.read(Path(run_a)), sides.read(Path(run_b))
    if side_a.kind != side_b.kind:
        raise UsageError(
            f"{run_a} holds {_kind_words(side_a)} and {run_b} {_kind_words(side_b)}: "
            "nothing to match"
        )
    cases_a, cases_b = side_a.cases, side_b.cases
    keys = list(side_a.keys)
    if pair is not None:
        if side_a.kind != "run":
            raise UsageError("--pair compares run folders, not pytest-benchmark saves")
        keys.remove(pair.axis)
        cases_a = cases_a[cases_a[pair.axis].astype(str) == pair.a]
        cases_b = cases_b[cases_b[pair.axis].astype(str) == pair.b]
    # A case is matched on the ranks it ran on too (`world_size`, one of a run's keys): ddp on 2
    # ranks is not ddp on 4, and the one-GPU baseline beside other ranks is not a run alone.
    merged = cases_a.merge(cases_b, on=keys, how="inner", suffixes=("_a", "_b"))
    shown = [k for k in keys if k != "world_size"]
    out, judged = [], []
    for rec in merged.to_dict("records"):
        row = {k: rec[k] for k in shown}
        row["status_a"], row["status_b"] = rec["status_a"], rec["status_b"]
        row.update(compare_memory.verdict(side_a, side_b, rec, memory_tolerance))
        if not rec["rounds_a"] or not rec["rounds_b"]:
            row["verdict"] = "missing"
        else:
            row["unit_a"], row["unit_b"] = rec["unit_a"], rec["unit_b"]
            judged.append((len(out), (rec.get("mode"), rec["rounds_a"], rec["rounds_b"])))
        out.append(row)
    verdicts = rounds.judge_rounds(
        [case for _, case in judged],
        min_effect=min_effect,
        confidence=confidence,
        statistic=statistic,
        looks=looks,
    )
    for (i, _), verdict in zip(judged, verdicts, strict=True):
        # The medians before the units, then the verdict's figures.
        units = {k: out[i].pop(k) for k in ("unit_a", "unit_b")}
        out[i] |= {k: verdict.pop(k) for k in ("median_ms_a", "median_ms_b")} | units | verdict
    table = pd.DataFrame(out)
    table.attrs.update(
        looks=looks,
        only_a=len(cases_a) - len(merged),
        only_b=len(cases_b) - len(merged),
        statistic=statistic,
        memory_tolerance=memory_tolerance,
        env_a=side_a.env,
        env_b=side_b.env,
    )
    return table


def _kind_words(side: sides.Side) -> str:
    return "timing runs" if side.kind == "run" else "pytest-benchmark saves"


def _method_lines(table: pd.DataFrame, min_effect: float, confidence: float) -> list[str]:
    """What decided the verdicts, what a round is per side, and the cases too few to judge."""
    statistic = table.attrs.get("statistic", "median")
    alpha = 1 - confidence
    judged = table[table["verdict"] != "missing"] if "verdict" in table else table
    tested = judged[judged["p_value"].notna()] if "p_value" in judged else judged.iloc[:0]
    family = len(tested)
    lines = procedure_lines(min_effect, confidence, statistic, table.attrs.get("looks", 1))
    if family:
        lines += [
            f"Verdicts hold the chance of any false `faster` or `slower` across the {family} "
            f"case{'s' if family != 1 else ''} at {alpha:.0%} (Holm's correction).",
            "",
        ]
    units = {u for c in ("unit_a", "unit_b") if c in judged for u in judged[c].dropna()}
    for name in ("a", "b"):
        col = f"unit_{name}"
        if col in judged and judged[col].nunique() == 1 and f"rounds_{name}" in judged:
            counts = sorted({int(n) for n in judged[f"rounds_{name}"]})
            many = "–".join(map(str, (counts[0], counts[-1]))) if len(counts) > 1 else counts[0]
            lines.append(f"Rounds of {name.upper()}: {many} {sides.UNITS[judged[col].iloc[0]]}.  ")
    lines += [""]
    if units & set(sides.ONE_PROCESS):
        lines += [
            "**Rounds of one process**: windows of one run, or one pytest-benchmark save's "
            "calls, follow each other within seconds; they show the process's own spread, not "
            "how far two runs of the same code differ, so a difference between the two runs "
            "larger than that reads as a real one. `ampbench ab` (fresh processes of both "
            "revisions, alternated) or `run --rounds` give verdicts that hold across runs.",
            "",
        ]
    few = int(judged["too_few"].fillna(False).astype(bool).sum()) if "too_few" in judged else 0
    if few:
        which = "Every case" if few == len(judged) else f"{few} case(s)"
        need = rounds.MIN_ROUNDS
        lines += [
            f"**Too few rounds to judge**: {which} had fewer than {need} rounds a side, which "
            "shows nothing of how far rounds of the same code scatter: they are `unclear`, their "
            f"ratio shown for information. Give each side {need} rounds or more (`ampbench ab`, "
            f"`run --rounds {need}`, or `--repeats {need}` within one run); how many rounds find "
            "a 3% change on a whole grid is measured in docs/comparing.md.",
            "",
        ]
    return lines


def procedure_lines(min_effect: float, confidence: float, statistic: str, looks: int) -> list[str]:
    """The judge's procedure, the error it controls and what makes each verdict."""
    alpha = 1 - confidence
    spent = (
        f" This comparison looked at its rounds {looks} times as they came (`ab`'s stopping "
        f"rule): each look spent {alpha / looks:.2g} of it, its intervals are at "
        f"{100 - 100 * alpha / looks:.4g}%, and the chance of a false call at any look stays at "
        f"{alpha:.0%}."
        if looks > 1
        else ""
    )
    return [
        f"**Procedure**: {rounds.PROCEDURE}. **Error controlled**: the {rounds.ERROR_CONTROLLED}, "
        f"at {alpha:.0%} over all the cases of the comparison.{spent}",
        "",
        "Ratio = B's step time over A's (below 1: B faster). Each round is one observation, "
        f"summed up by the {statistic} of its step times; ratio: the ratio of the two sides' "
        "geometric means over the rounds; interval: its confidence interval from the t "
        "distribution with df degrees of freedom (the case's own, plus what the cases of its "
        "mode lend it), p: the t-test's, p_holm: p after Holm's correction across the cases; "
        "noise: the standard deviation of one round's log (the spread between the rounds of "
        "one side), for information: the test is on the means, so it sharpens with rounds. A "
        f"case is faster or slower when its p_holm is at most {alpha / looks:.2g} and its ratio "
        f"is beyond 1 ± the smallest effect reported ({min_effect:.1%}), same when its interval "
        f"lies within 1 ± {min_effect:.1%}.",
        "",
    ]


def render(
    table: pd.DataFrame,
    *,
    run_a: Path,
    run_b: Path,
    pair: Pair | None,
    min_effect: float,
    confidence: float,
    warnings: list[str],
    title: str = "# ampbench compare",
    show_sides: bool = True,
) -> str:
    """The comparison as markdown: what decided the verdicts, their counts and the table;
    `show_sides` names A's and B's paths under the title."""
    shown = table.drop(
        columns=["too_few", "status_a", "status_b", *compare_memory.RAW], errors="ignore"
    )
    if {"status_a", "status_b"} <= set(table) and (table[["status_a", "status_b"]] != "ok").any(
        axis=None
    ):
        shown["status_a"], shown["status_b"] = table["status_a"], table["status_b"]
    verdicts = shown.pop("verdict")
    if "ratio" in shown:
        shown["ratio (B/A)"] = shown.pop("ratio").map(lambda r: f"{r:.4f}" if pd.notna(r) else "")
        looks = int(table.attrs.get("looks", 1))
        shown[f"{100 - 100 * (1 - confidence) / looks:.4g}% interval"] = [
            f"[{lo:.4f}, {hi:.4f}]" if pd.notna(lo) else "too few rounds"
            for lo, hi in zip(shown.pop("ratio_lo"), shown.pop("ratio_hi"), strict=True)
        ]
        shown["p_value"] = shown.pop("p_value")
        if "p_holm" in shown:
            shown["p_holm"] = shown.pop("p_holm")
    if "noise" in shown:
        shown["noise"] = shown.pop("noise").map(lambda x: f"±{x:.1%}" if pd.notna(x) else "")
    if "rounds_a" in shown:
        shown["rounds (A:B)"] = [
            f"{int(ra)}:{int(rb)}" if pd.notna(ra) else ""
            for ra, rb in zip(shown.pop("rounds_a"), shown.pop("rounds_b"), strict=True)
        ]
    shown = shown.drop(columns=["unit_a", "unit_b"], errors="ignore")
    shown["verdict"] = verdicts
    shown = shown.join(compare_memory.columns(table))
    constant = [c for c in shown.columns if c in results.axes() and shown[c].nunique() == 1]
    if "rounds (A:B)" in shown and shown["rounds (A:B)"].nunique() == 1:
        constant.append("rounds (A:B)")
    what = f", {pair.axis} {pair.a} (A) against {pair.b} (B)" if pair else ""
    lines = [title, ""]
    if show_sides:
        lines += [
            f"A (baseline): `{paths.shown(run_a)}`  ",
            f"B (candidate): `{paths.shown(run_b)}`{what}",
            "",
        ]
    lines += _method_lines(table, min_effect, confidence)
    lines += compare_memory.method_lines(table, table.attrs.get("memory_tolerance", memory.DEFAULT))
    same = [f"{c}={shown[c].iloc[0]}" for c in constant if str(shown[c].iloc[0]) not in ("", "nan")]
    if same:
        lines += [f"Same in every row: {', '.join(same)}.", ""]
    if warnings:
        lines += ["**Environments differ**: " + "; ".join(warnings), ""]
    counts = table["verdict"].value_counts()
    memory_counts = compare_memory.summary(table)
    lines += [
        ", ".join(f"{n} {v}" for v, n in counts.items())
        + (f"; {memory_counts}" if memory_counts else "")
        + ".",
        "",
    ]
    only = [(table.attrs.get(k, 0), name) for k, name in (("only_a", "A"), ("only_b", "B"))]
    lines += [f"{n} case(s) ran only in {name} and are left out." for n, name in only if n]
    lines += [""] if any(n for n, _ in only) else []
    lines.append(tables.markdown(shown.drop(columns=constant)))
    return "\n".join(lines) + "\n"


def output_path(run_a: Path, run_b: Path, pair: Pair | None) -> Path:
    """Where the table is written: into the newer of two run folders, named after the other;
    for other sides, into B's folder, named after A."""
    run_a, run_b = Path(run_a), Path(run_b)
    suffix = f"_{pair.axis}_{pair.a}_vs_{pair.b}" if pair else ""
    if not ((run_a / results.ENV).is_file() and (run_b / results.ENV).is_file()):
        folder = run_b if run_b.is_dir() else run_b.parent
        return folder / f"compare_{run_a.stem if run_a.is_file() else run_a.name}{suffix}.md"
    env_a, env_b = results.read_env(run_a), results.read_env(run_b)
    newer, older = (
        (run_b, run_a) if env_b.get("started", "") >= env_a.get("started", "") else (run_a, run_b)
    )
    if newer.resolve() == older.resolve():
        return newer / f"compare_self{suffix}.md"
    return newer / f"compare_{older.name}{suffix}.md"
