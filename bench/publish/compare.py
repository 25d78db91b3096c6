"""Comparing two runs case by case, from their raw samples.

Run A is the baseline, run B the candidate. For each case present in both (matched on every axis,
or on every axis but one with `pair`), the ratio is B's step time over A's: below 1 means B is
faster.

Two runs of the same code differ by more than their per-step samples suggest: clocks, temperature,
other work on the machine and the state of the process move a whole window of steps at once, so
steps are not independent observations of a run. A run timed with repeats (`run --repeats N`:
N windows of `steps` steps after one warm-up) shows that drift, and when both runs have at least
2 windows of a case each window's median is one observation (`repeat_verdict`):
- ratio: B's geometric mean of its window medians over A's;
- interval: a t-interval of the log ratio, from the spread of the log window medians pooled over
  both runs (`n_a + n_b - 2` degrees of freedom); p: the t-test of the same;
- noise: `NOISE_K` times that spread, the run-to-run change a case's own windows make plausible.
Verdicts, with `min_effect` the smallest change worth reporting (default 2%) and
`bound = max(min_effect, noise)`:
- `faster` / `slower`: the interval excludes 1 and the ratio is beyond 1 -/+ bound;
- `same`: the whole interval lies within 1 -/+ min_effect. Noise does not widen it: a run pair
  whose windows spread by 50% would otherwise call a 4× change `same`; where the noise exceeds
  min_effect, the interval (about as wide as the noise) rarely fits, and the case is `unclear`;
- `unclear`: anything else (an interval too wide to decide either way);
- `missing`: the case ran in both runs but did not pass in one of them.
The windows of a run follow each other within seconds: what changes more slowly (the load of a
shared machine over minutes, another GPU of the same model) they cannot show, and a difference
of that kind between two runs reads as a real one. `min_effect` is the guard against it.

A case without repeats in one of the runs (a folder older than `--repeats`, or `--repeats 1`)
falls back to the per-step test (`verdict`), which treats steps as independent and so ignores
run-to-run noise; the rendered table says so. There the interval comes from a bootstrap of the
two sets of samples (`scipy.stats.bootstrap`), a Mann-Whitney U test says whether the two
distributions differ, and `faster` / `slower` need both to say so and the ratio beyond 1 -/+
min_effect; `same`: the interval within 1 -/+ min_effect.
Cases that ran in only one of the runs are left out of the table and counted in its heading.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from bench.publish import tables
from bench.store import paths, results

# scipy 1.15 renamed bootstrap's `random_state` to `rng`; GPU images may carry an older scipy.
_RNG_ARG = "rng" if "rng" in inspect.signature(stats.bootstrap).parameters else "random_state"

NOISE_K = 2.0
"""The noise floor of a repeat verdict, in units of the pooled spread (standard deviation of the
log window medians) of the two runs: a change smaller than twice what separates one window of a
run from another is not told apart from two runs of the same code, whose offset from each other
(another process, another machine) is at least that of two windows of one run and often more."""

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


def repeat_verdict(
    a: list[np.ndarray],
    b: list[np.ndarray],
    *,
    min_effect: float = 0.02,
    confidence: float = 0.95,
    noise_k: float = NOISE_K,
) -> dict[str, object]:
    """The verdict from the timed windows of each run (a list of per-step samples per window, at
    least 2 windows per run): each window's median is one observation. Returns the ratio (B over
    A, of the geometric means of the window medians), its t-interval, the t-test's p-value, the
    noise floor (`noise_k` times the pooled relative spread between windows) and the verdict."""
    log_a = np.log([np.median(np.asarray(w, dtype=float)) for w in a])
    log_b = np.log([np.median(np.asarray(w, dtype=float)) for w in b])
    n_a, n_b = len(log_a), len(log_b)
    if n_a < 2 or n_b < 2:
        raise ValueError(f"a repeat verdict needs 2 windows per run or more, got {n_a} and {n_b}")
    diff = float(log_b.mean() - log_a.mean())
    dof = n_a + n_b - 2
    # Pooled: two runs of one case on one kind of machine drift alike, and with 2 or 3 windows
    # a run, Welch's separate variances would leave the interval 1 or 2 degrees of freedom.
    squares = ((log_a - log_a.mean()) ** 2).sum() + ((log_b - log_b.mean()) ** 2).sum()
    spread = float(np.sqrt(squares / dof))  # of a log: a relative spread
    se = spread * np.sqrt(1 / n_a + 1 / n_b)
    half = float(stats.t.ppf((1 + confidence) / 2, dof) * se)
    lo, hi = float(np.exp(diff - half)), float(np.exp(diff + half))
    # With identical windows within each run (no spread) any difference is certain.
    p = float(2 * stats.t.sf(abs(diff) / se, dof)) if se > 0 else float(diff == 0)
    ratio = float(np.exp(diff))
    noise = noise_k * spread
    bound = max(min_effect, noise)
    if hi < 1 and ratio < 1 - bound:
        word = "faster"
    elif lo > 1 and ratio > 1 + bound:
        word = "slower"
    elif 1 - min_effect <= lo and hi <= 1 + min_effect:
        word = "same"
    else:
        word = "unclear"
    return {
        "ratio": ratio,
        "ratio_lo": lo,
        "ratio_hi": hi,
        "p_value": p,
        "noise": noise,
        "verdict": word,
    }


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


@dataclass(frozen=True)
class _Timed:
    """A case's total step times: every step, and each timed window's steps where the run had
    more than one (`repeats_ms` of samples.jsonl)."""

    steps: np.ndarray
    windows: list[np.ndarray] | None


def _ok_samples(run_dir: Path) -> tuple[pd.DataFrame, dict[str, _Timed]]:
    rows = results.load(run_dir)
    timed = {}
    for rec in results.read_rows(run_dir / results.SAMPLES):  # a case's last record wins
        windows = rec.get("repeats_ms", {}).get("total")
        timed[rec["case_id"]] = _Timed(
            steps=np.asarray(rec["samples_ms"].get("total", []), dtype=float),
            windows=[np.asarray(w, dtype=float) for w in windows] if windows else None,
        )
    return rows, timed


def compare(
    run_a: Path,
    run_b: Path,
    *,
    pair: Pair | None = None,
    min_effect: float = 0.02,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """One row per case matched between the runs, with medians, ratio, interval and verdict.
    `method` says which test decided: `repeats` (window medians) or `steps` (per-step samples,
    where a run has no repeats of the case); `repeats_a` and `repeats_b` count the windows."""
    rows_a, timed_a = _ok_samples(run_a)
    rows_b, timed_b = _ok_samples(run_b)
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
        a = timed_a.get(rec["case_id_a"]) if rec["status_a"] == "ok" else None
        b = timed_b.get(rec["case_id_b"]) if rec["status_b"] == "ok" else None
        row = {k: rec[k] for k in keys}
        row["status_a"], row["status_b"] = rec["status_a"], rec["status_b"]
        if a is None or b is None or len(a.steps) < 2 or len(b.steps) < 2:
            row["verdict"] = "missing"
            out.append(row)
            continue
        row["median_ms_a"], row["median_ms_b"] = (
            float(np.median(a.steps)),
            float(np.median(b.steps)),
        )
        row["repeats_a"] = len(a.windows) if a.windows else 1
        row["repeats_b"] = len(b.windows) if b.windows else 1
        if row["repeats_a"] >= 2 and row["repeats_b"] >= 2:
            row["method"] = "repeats"
            row.update(
                repeat_verdict(a.windows, b.windows, min_effect=min_effect, confidence=confidence)
            )
        else:
            row["method"] = "steps"
            row.update(verdict(a.steps, b.steps, min_effect=min_effect, confidence=confidence))
        out.append(row)
    table = pd.DataFrame(out)
    table.attrs["only_a"] = len(rows_a) - len(merged)
    table.attrs["only_b"] = len(rows_b) - len(merged)
    return table


def _method_lines(table: pd.DataFrame, min_effect: float) -> list[str]:
    """What decided the verdicts: one paragraph per method in the table."""
    method = table["method"] if "method" in table else pd.Series(dtype=object)
    n_steps, n_repeats = int((method == "steps").sum()), int((method == "repeats").sum())
    lines = []
    if n_repeats or not n_steps:
        lines += [
            "Ratio = B's step time over A's (below 1: B faster). Each timed window's median "
            "(`run --repeats`) is one observation: the ratio is of the geometric means of the "
            "window medians; interval: t-interval from the spread between windows, pooled over "
            f"both runs; p: t-test; noise: {NOISE_K:g} × that spread. A case is faster or slower "
            "when its interval excludes 1 and its ratio is beyond 1 ± the larger of its noise and "
            f"the smallest effect reported ({min_effect:.1%}), same when its interval lies within "
            f"1 ± {min_effect:.1%}.",
            "",
        ]
    if n_steps:
        which = "Every case" if not n_repeats else f"{n_steps} case(s)"
        lines += [
            f"**{which} without repeats in A or B**: the verdicts ignore run-to-run noise because "
            "the runs have no repeats. They treat the per-step samples as independent (ratio of "
            "the medians of all steps; interval: bootstrap of that ratio; p: Mann-Whitney U; "
            f"smallest effect reported: {min_effect:.1%}), and two runs of the same code often "
            "differ by more than those intervals. Time both runs with `--repeats 2` or more.",
            "",
        ]
    return lines


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
    verdicts = shown.pop("verdict")
    if "ratio" in shown:
        shown["ratio (B/A)"] = shown.pop("ratio").map(lambda r: f"{r:.4f}" if pd.notna(r) else "")
        shown[f"{confidence:.0%} interval"] = [
            f"[{lo:.4f}, {hi:.4f}]" if pd.notna(lo) else ""
            for lo, hi in zip(shown.pop("ratio_lo"), shown.pop("ratio_hi"), strict=True)
        ]
        shown["p_value"] = shown.pop("p_value")
    if "noise" in shown:
        shown["noise"] = shown["noise"].map(lambda x: f"±{x:.1%}" if pd.notna(x) else "")
    windows = ""
    if "repeats_a" in shown:
        pairs = [
            f"{int(ra)}:{int(rb)}" if pd.notna(ra) else ""
            for ra, rb in zip(shown.pop("repeats_a"), shown.pop("repeats_b"), strict=True)
        ]
        measured = {w for w in pairs if w}
        if len(measured) == 1:
            ra, rb = next(iter(measured)).split(":")
            if (ra, rb) != ("1", "1"):
                windows = f"Timed windows per case: {ra} in A, {rb} in B"
        else:
            shown["windows (A:B)"] = pairs
    if "method" in shown and shown["method"].dropna().nunique() <= 1:
        shown = shown.drop(columns="method")
    shown["verdict"] = verdicts
    constant = [c for c in shown.columns if c in results.axes() and shown[c].nunique() == 1]
    what = f", {pair.axis} {pair.a} (A) against {pair.b} (B)" if pair else ""
    lines = [
        "# ampbench compare",
        "",
        f"A (baseline): `{paths.shown(run_a)}`  ",
        f"B (candidate): `{paths.shown(run_b)}`{what}",
        "",
        *_method_lines(table, min_effect),
    ]
    notes = []
    if constant:
        notes.append("Same in every row: " + ", ".join(f"{c}={shown[c].iloc[0]}" for c in constant))
    if windows:
        notes.append(windows)
    if notes:
        lines += [". ".join(notes) + ".", ""]
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
