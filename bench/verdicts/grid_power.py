"""The power study of the rounds judge on the default grid: how often a known change is called, and
a change that is not there, with rounds bootstrapped from committed runs. CPU only:
`python -m bench.verdicts.grid_power RUN [RUN ...] --out FOLDER` writes rounds.csv and README.md."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from bench.store import paths, results
from bench.text import tables
from bench.verdicts import power, rounds


def window_steps(run: Path) -> dict[str, int]:
    """Each case's steps a window, as its folder says (the row's `steps`, which `--steps` set;
    else the run's config): a case's samples are its windows back to back."""
    default = results.read_env(run).get("config", {}).get("steps")
    rows = results.read_rows(Path(run) / results.ROWS)
    return {r["case_id"]: int(r.get("steps") or default) for r in rows}


def extract(runs: list[Path]) -> pd.DataFrame:
    """One row per case, run and window: `case_id`, `mode`, `run`, `window`, `step_ms` (the
    window's median total step time), for the cases that every run timed."""
    rows = []
    for i, run in enumerate(runs):
        steps = window_steps(Path(run))
        for rec in results.read_jsonl(Path(run) / results.SAMPLES):  # packed in results/
            total = np.asarray(rec["samples_ms"]["total"], dtype=float)
            windows = max(1, len(total) // steps[rec["case_id"]])
            for w, part in enumerate(np.array_split(total, windows)):
                if np.isnan(part).all():  # a window GradScaler skipped whole: no training step
                    continue
                rows.append(
                    {
                        "case_id": rec["case_id"],
                        "mode": rec["case_id"].split("/")[0],
                        "run": i,
                        "window": w,
                        "step_ms": float(np.nanmedian(part)),
                    }
                )
    table = pd.DataFrame(rows)
    shared = table.groupby("case_id")["run"].nunique() == len(runs)
    return table[table["case_id"].isin(shared[shared].index)].reset_index(drop=True)


def cases_of(table: pd.DataFrame) -> list[power.Case]:
    """The simulation's cases from `extract`'s table (or the fixture read back)."""
    return [
        power.Case.of(g["mode"].iloc[0], g["step_ms"].to_numpy())
        for _, g in table.groupby("case_id", sort=True)
    ]


QUIET = 0.01
"""Cases scattering more than this (sd of log rounds) cannot show a 3% change in a few rounds."""


def study(
    cases: list[power.Case], *, rounds_a_side: list[int], comparisons: int, same: int, seed: int
) -> pd.DataFrame:
    """Per rounds a side and correction (Holm's; Benjamini-Hochberg's to compare): `same` A/A
    comparisons and `comparisons` with `power.SHIFTS`, the judge's minimum of rounds set aside."""
    rng = np.random.default_rng(seed)
    shifts = [power.SHIFTS[i % len(power.SHIFTS)] for i in range(len(cases))]
    none = [0.0] * len(cases)
    quiet = [power.spread(c) < QUIET for c in cases]
    out = []
    for n in rounds_a_side:
        for correction in rounds.CORRECTIONS:
            how = {"rounds_a_side": n, "correction": correction, "min_rounds": 2}
            aa = [power.one_comparison(cases, none, rng, **how) for _ in range(same)]
            mixed = [power.one_comparison(cases, shifts, rng, **how) for _ in range(comparisons)]
            rates = power.rates(mixed, shifts)
            calm = power.rates(mixed, shifts, quiet)
            out.append(
                {
                    "rounds a side": n,
                    "correction": correction,
                    "A/A: any false call": power.rates(aa, none)["any_false"],
                    "shifted: any false call": rates["any_false"],
                    "+3% called": rates["called_+3.0%"],
                    "−3% called": rates["called_-3.0%"],
                    "+5% called": rates["called_+5.0%"],
                    "+1% called": rates["called_+1.0%"],
                    f"±3% called, spread < {QUIET:.0%}": (
                        calm["called_+3.0%"] + calm["called_-3.0%"]
                    )
                    / 2,
                }
            )
    table = pd.DataFrame(out)
    table.attrs["quiet"] = int(sum(quiet))
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.verdicts.grid_power")
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--rounds", type=int, nargs="+", default=[3, 4, 5, 7])
    parser.add_argument("--comparisons", type=int, default=100)
    parser.add_argument("--same", type=int, default=300, help="A/A comparisons per row")
    parser.add_argument("--seed", type=int, default=57)
    args = parser.parse_args(argv)
    table = extract(args.runs)
    newest = table[table["run"] == len(args.runs) - 1]
    how = {"rounds_a_side": args.rounds, "comparisons": args.comparisons, "same": args.same}
    scenarios = {
        name: study(cases_of(rows), **how, seed=args.seed)
        for name, rows in (("all", table), ("newest", newest))
    }
    args.out.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out / "rounds.csv", index=False)
    command = "python -m bench.verdicts.grid_power " + " ".join(
        sys.argv[1:] if argv is None else argv
    )
    window_sizes = sorted({n for run in args.runs for n in window_steps(run).values()})
    text = [
        "# Power of the rounds judge on the default grid",
        "",
        f"Made by `{paths.shown_command(command)}` (CPU only; the rounds it resampled: "
        "[rounds.csv](rounds.csv)).",
        "",
        f"Judge: {rounds.PROCEDURE}; it controls the {rounds.ERROR_CONTROLLED}, at 5%.",
        "",
        f"{table['case_id'].nunique()} cases, {table['mode'].nunique()} modes, from "
        + ", ".join(f"`{paths.shown(r)}`" for r in args.runs)
        + ". A simulated round of a case is one of its real windows (the median total step "
        f"time of {' or '.join(map(str, window_sizes))} steps), drawn at random and smoothed "
        "(a normal kernel in logs, Silverman's bandwidth), times a "
        f"drift shared by all the cases of one simulated process (lognormal, {power.DRIFT:.1%}). "
        "B's rounds of a case are multiplied by its shift, given to the cases in turn: "
        + ", ".join(f"{s:+.1%}" for s in power.SHIFTS)
        + f". Each row: {args.same} simulated comparisons of A/A (no shift) and "
        f"{args.comparisons} shifted; the judge's own minimum of {rounds.MIN_ROUNDS} rounds a "
        "side (below it a case is `unclear`, too few rounds) set aside, to show what fewer "
        "rounds would do. A false call: a case without a shift called faster or slower. "
        "Called: the "
        "share of the cases of that shift called in its direction; the last column only among "
        f"the cases whose real windows scatter by less than {QUIET:.0%} (standard deviation of "
        "their logs). `holm`: Holm's correction, the verdicts' (holds the chance of any false "
        "call); `bh`: Benjamini-Hochberg's, for comparison (holds the expected share of false "
        "calls among the calls; the same as Holm's when nothing changed).",
        "",
        f"## The windows of every run ({scenarios['all'].attrs['quiet']} cases scatter by less "
        f"than {QUIET:.0%})",
        "",
        "Each case's windows from all the runs: how far real processes (here of two commits, "
        "days apart) differ is part of the noise.",
        "",
        tables.markdown(scenarios["all"]),
        "",
        f"## The windows of the newest run ({scenarios['newest'].attrs['quiet']} cases scatter "
        f"by less than {QUIET:.0%})",
        "",
        f"Each case's windows from `{paths.shown(args.runs[-1])}` only, the process drift "
        "between rounds the simulated one alone.",
        "",
        tables.markdown(scenarios["newest"]),
        "",
    ]
    (args.out / "README.md").write_text("\n".join(text))
    print("\n".join(text))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
