"""Comparing two runs case by case, from their raw per-step samples.

Run A is the baseline, run B the candidate. For each case present in both (matched on every axis,
or on every axis but one with `pair`), the ratio is B's median step time over A's: below 1 means B
is faster. Its confidence interval comes from a bootstrap of the two sets of samples
(`scipy.stats.bootstrap`), and a Mann-Whitney U test says whether the two distributions differ.

Verdicts, with `min_effect` the smallest change worth reporting (default 2%):
- `faster` / `slower`: the interval excludes 1, the U test rejects equality at the same level, and
  the ratio itself is beyond 1 -/+ min_effect;
- `same`: the whole interval lies within 1 -/+ min_effect;
- `unclear`: anything else (an interval too wide to decide either way);
- `missing`: the case ran in both runs but did not pass in one of them.
Cases that ran in only one of the runs are left out of the table and counted in its heading.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from bench import paths, results, tables

# scipy 1.15 renamed bootstrap's `random_state` to `rng`; GPU images may carry an older scipy.
_RNG_ARG = "rng" if "rng" in inspect.signature(stats.bootstrap).parameters else "random_state"

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


def verdict(
    a: np.ndarray,
    b: np.ndarray,
    *,
    min_effect: float = 0.02,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> dict[str, object]:
    """Ratio of medians (B over A), its bootstrap interval, the U test's p-value, and a verdict."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    ratio = float(np.median(b) / np.median(a))

    def ratio_of_medians(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.median(y, axis=axis) / np.median(x, axis=axis)

    ci = stats.bootstrap(
        (a, b),
        ratio_of_medians,
        confidence_level=confidence,
        n_resamples=n_resamples,
        method="percentile",
        vectorized=True,
        **{_RNG_ARG: np.random.default_rng(seed)},
    ).confidence_interval
    lo, hi = float(ci.low), float(ci.high)
    p = float(stats.mannwhitneyu(a, b, alternative="two-sided").pvalue)
    differs = p < 1 - confidence
    if differs and hi < 1 and ratio < 1 - min_effect:
        word = "faster"
    elif differs and lo > 1 and ratio > 1 + min_effect:
        word = "slower"
    elif 1 - min_effect <= lo and hi <= 1 + min_effect:
        word = "same"
    else:
        word = "unclear"
    return {"ratio": ratio, "ratio_lo": lo, "ratio_hi": hi, "p_value": p, "verdict": word}


def env_differences(env_a: dict, env_b: dict) -> list[str]:
    """One line per environment field that differs, naming the field and both values."""
    return [
        f"{field}: {env_a.get(field)!r} in A, {env_b.get(field)!r} in B"
        for field in ENV_FIELDS
        if env_a.get(field) != env_b.get(field)
    ]


def _ok_totals(run_dir: Path) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    rows = results.load(run_dir)
    samples = results.load_samples(run_dir)
    totals = {
        case_id: group.sort_values("step")["ms"].to_numpy()
        for case_id, group in samples[samples["phase"] == "total"].groupby("case_id")
    }
    return rows, totals


def compare(
    run_a: Path,
    run_b: Path,
    *,
    pair: Pair | None = None,
    min_effect: float = 0.02,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """One row per case matched between the runs, with medians, ratio, interval and verdict."""
    rows_a, totals_a = _ok_totals(run_a)
    rows_b, totals_b = _ok_totals(run_b)
    keys = [k for k in results.axes() if pair is None or k != pair.axis]
    if pair is not None:
        rows_a = rows_a[rows_a[pair.axis].astype(str) == pair.a]
        rows_b = rows_b[rows_b[pair.axis].astype(str) == pair.b]
    # A case is matched on the ranks it ran on too: ddp on 2 ranks is not ddp on 4, and the
    # one-GPU baseline run beside other ranks is not a run alone.
    join = [*keys, "world_size"]
    merged = rows_a[[*join, "case_id", "status"]].merge(
        rows_b[[*join, "case_id", "status"]], on=join, how="inner", suffixes=("_a", "_b")
    )
    out = []
    for rec in merged.to_dict("records"):
        a = totals_a.get(rec["case_id_a"]) if rec["status_a"] == "ok" else None
        b = totals_b.get(rec["case_id_b"]) if rec["status_b"] == "ok" else None
        row = {k: rec[k] for k in keys}
        row["status_a"], row["status_b"] = rec["status_a"], rec["status_b"]
        if a is None or b is None or len(a) < 2 or len(b) < 2:
            row["verdict"] = "missing"
        else:
            row["median_ms_a"], row["median_ms_b"] = float(np.median(a)), float(np.median(b))
            row.update(verdict(a, b, min_effect=min_effect, confidence=confidence))
        out.append(row)
    table = pd.DataFrame(out)
    table.attrs["only_a"] = len(rows_a) - len(merged)
    table.attrs["only_b"] = len(rows_b) - len(merged)
    return table


def render(
    table: pd.DataFrame,
    *,
    run_a: Path,
    run_b: Path,
    pair: Pair | None,
    min_effect: float,
    confidence: float,
    warnings: list[str],
) -> str:
    shown = table.copy()
    if "ratio" in shown:
        shown["ratio (B/A)"] = shown["ratio"].map(lambda r: f"{r:.4f}" if pd.notna(r) else "")
        shown[f"{confidence:.0%} interval"] = [
            f"[{lo:.4f}, {hi:.4f}]" if pd.notna(lo) else ""
            for lo, hi in zip(shown["ratio_lo"], shown["ratio_hi"], strict=True)
        ]
        shown = shown.drop(columns=["ratio", "ratio_lo", "ratio_hi"])
    constant = [c for c in shown.columns if c in results.axes() and shown[c].nunique() == 1]
    what = f", {pair.axis} {pair.a} (A) against {pair.b} (B)" if pair else ""
    lines = [
        "# ampbench compare",
        "",
        f"A (baseline): `{paths.shown(run_a)}`  ",
        f"B (candidate): `{paths.shown(run_b)}`{what}",
        "",
        f"Ratio = B's median step time over A's (below 1: B faster), from the raw per-step "
        f"samples; interval: bootstrap of the ratio of medians; p: Mann-Whitney U. Smallest "
        f"effect reported: {min_effect:.1%}.",
        "",
    ]
    if constant:
        fixed = ", ".join(f"{c}={shown[c].iloc[0]}" for c in constant)
        lines += [f"Same in every row: {fixed}.", ""]
    if warnings:
        lines += ["**Environments differ**: " + "; ".join(warnings), ""]
    counts = table["verdict"].value_counts()
    lines += [", ".join(f"{n} {v}" for v, n in counts.items()) + ".", ""]
    only = [(table.attrs.get(k, 0), name) for k, name in (("only_a", "A"), ("only_b", "B"))]
    lines += [f"{n} case(s) ran only in {name} and are left out." for n, name in only if n]
    lines += [""] if any(n for n, _ in only) else []
    lines.append(tables.markdown(shown.drop(columns=constant)))
    return "\n".join(lines) + "\n"


def output_path(run_a: Path, run_b: Path, pair: Pair | None) -> Path:
    """Written next to the newer run (by start time), named after the other one."""
    env_a, env_b = results.read_env(run_a), results.read_env(run_b)
    newer, older = (
        (run_b, run_a) if env_b.get("started", "") >= env_a.get("started", "") else (run_a, run_b)
    )
    suffix = f"_{pair.axis}_{pair.a}_vs_{pair.b}" if pair else ""
    if newer.resolve() == older.resolve():
        return newer / f"compare_self{suffix}.md"
    return newer / f"compare_{older.name}{suffix}.md"
