"""The speed rules' error and power, by simulation, and the between-run spread they assume, from
a committed sweep (CPU only, no GPU).

1. The between-run spread: the committed H200 sweep
   results/own-loop-h200/20261204T121255Z_NVIDIA-H200_5915cc1_recipes/ (3 modes x 3 seeds, each
   mode once at each position of a round): the SD of the logs of the runs' median step times,
   pooled over the modes (what `bench.verdicts.driver.BETWEEN_RUN_SD` holds), and what is left
   when the position in the round is a factor too (mode + position, by least squares).
2. The sweep's rule (`bench.verdicts.power.speed_sessions`: `many_to_one.against_reference` at each
   timed look of a `driver.SpeedPlan`): false calls in A/A sessions (any mode called faster or
   slower, over the modes and the looks) and power, for one look at the default seeds, the
   default budget's looks (3 to 8 runs alone), looks from 2 and from 3 runs to 10; three modes
   against fp32 (the GPU's defaults) and one; at 2%, 5% and the spread of 1. Beside it, the same
   looks at the training rule's exact levels (`sequential.levels`, for normal statistics).
3. `compare`'s and `ab`'s judge (`rounds.judge_family`, the moderated t): A/A over a family of
   cases at 1-3% between rounds, by rounds a side, with the moderation from 2 rounds and from
   `PRIOR_ROUNDS` on; `ab`'s looks (5 to 7, alpha / 3 each); power for a change of as many of the
   rounds' SDs as a 1.2x speed-up is of 9%, one case of 8.

Run from the repository root: `PYTHONPATH=. python scripts/speed_rule_sim.py [SWEEP_FOLDER]`;
it writes results/sessions/speed_rule_sim.txt and prints the same. SWEEP_FOLDER: another sweep
whose runs are balanced by position (as many timed rounds as modes, or a multiple) for part 1.
"""

from __future__ import annotations

import gzip
import json
import math
import sys
from pathlib import Path

import numpy as np

from bench.verdicts import driver, power, rounds, sequential

ROOT = Path(__file__).resolve().parent.parent
SWEEP = ROOT / "results/own-loop-h200/20261204T121255Z_NVIDIA-H200_5915cc1_recipes"
OUT = ROOT / "results/sessions/speed_rule_sim.txt"
SESSIONS = 20000
FAMILIES = 1500


def between_run_sd(lines: list[str], sweep: Path) -> None:
    path = sweep / "rows.jsonl.gz"
    with gzip.open(path, "rt") if path.is_file() else (sweep / "rows.jsonl").open() as f:
        rows = [json.loads(x) for x in f if x.strip()]
    rows = [r for r in rows if r.get("status") == "ok" and r.get("ran") != "packed"
            and r.get("timed_look") in (None, 1)]  # fmt: skip
    modes = sorted({r["mode"] for r in rows})
    # Position: the run's place in its round (rows are written in the order the runs ran).
    place: dict[int, int] = {}
    data = []
    for r in rows:
        k = place.get(r["round"], 0)
        place[r["round"]] = k + 1
        data.append((r["mode"], k, math.log(r["total_ms"])))
    y = np.array([d[2] for d in data])
    by_mode = np.array([modes.index(d[0]) for d in data])
    resid = y - np.array([y[by_mode == m].mean() for m in by_mode])
    pooled = math.sqrt((resid**2).sum() / (len(y) - len(modes)))
    positions = sorted({d[1] for d in data})
    x = np.zeros((len(y), len(modes) + len(positions) - 1))
    for i, (mode, k, _) in enumerate(data):
        x[i, modes.index(mode)] = 1.0
        if k:
            x[i, len(modes) + k - 1] = 1.0
    beta, *_ = np.linalg.lstsq(x, y, rcond=None)
    left = y - x @ beta
    with_position = math.sqrt((left**2).sum() / (len(y) - x.shape[1]))
    lines += [
        f"## 1. Between-run spread: {sweep.resolve().relative_to(ROOT)}",
        "",
        "run  mode       position  median ms",
        *(f"{i:>3}  {d[0]:<9}  {d[1]:>8}  {math.exp(d[2]):9.3f}" for i, d in enumerate(data)),
        "",
        f"SD of log run medians, pooled over the modes ({len(y) - len(modes)} df): {pooled:.3f}",
        f"  (bench.verdicts.driver.BETWEEN_RUN_SD = {driver.BETWEEN_RUN_SD})",
        f"with the position in the round as a factor too ({len(y) - x.shape[1]} df): "
        f"{with_position:.3f}",
        "position effects (log, against the first place): "
        + ", ".join(f"{b:+.3f}" for b in beta[len(modes) :]),
        "",
    ]


def _rates(speedups, sd, plan, seed) -> dict[str, np.ndarray]:
    return power.speed_sessions(speedups, sd, plan, np.random.default_rng(seed), sessions=SESSIONS)


class _Recursion(driver.SpeedPlan):
    """The same looks at the training rule's exact levels (normal statistics)."""

    def levels(self, taken):
        if self.looks == 1:
            return (1 - self.confidence,)
        fractions = tuple(self.runs_at(k) / self.most for k in range(1, taken + 1))
        return tuple(2 * x for x in sequential.levels(fractions, (1 - self.confidence) / 2))


def sweep_rule(lines: list[str]) -> None:
    plans = {
        "one look at 3 runs": driver.SpeedPlan(3, 3),
        "default budget: 3 to 8": driver.SpeedPlan(3, 8),
        "2 to 10": driver.SpeedPlan(2, 10),
        "3 to 10": driver.SpeedPlan(3, 10),
    }
    sds = (0.02, 0.05, driver.BETWEEN_RUN_SD)
    lines += [
        "## 2. The sweep's speed rule",
        "",
        f"{SESSIONS} simulated sweeps a figure; a timed run's log median ~ N(mode's, SD).",
        "A/A: share of sessions with any faster/slower call, over the modes and the looks.",
        "",
        "plan (timed runs a side)   SD     A/A, 3 modes  A/A, 1 mode  A/A 1 mode, exact levels",
    ]
    for i, (name, plan) in enumerate(plans.items()):
        for j, sd in enumerate(sds):
            three = _rates([1.0] * 3, sd, plan, 10 * i + j)["verdict"]
            one = _rates([1.0], sd, plan, 100 + 10 * i + j)["verdict"]
            exact = power.speed_sessions(
                [1.0], sd, _Recursion(plan.first, plan.most), np.random.default_rng(200 + j),
                sessions=SESSIONS,
            )["verdict"]  # fmt: skip
            lines.append(
                f"{name:<26} {sd:.0%}  {np.isin(three, (-1, 1)).any(1).mean():12.4f}  "
                f"{np.isin(one, (-1, 1)).any(1).mean():11.4f}  "
                f"{np.isin(exact, (-1, 1)).any(1).mean():11.4f}"
            )
    lines += [
        "",
        "Power (three modes against fp32; the effect on the last, or on all three):",
        "",
        "plan                       1.2x @ 9%: called  mean runs  | 1.3x @ 5%: all three at the "
        "first look | 1.7x @ 3%: at the first look",
    ]
    for i, (name, plan) in enumerate(plans.items()):
        a = _rates([1.0, 1.0, 1.2], 0.09, plan, 300 + i)
        called = a["verdict"][:, 2] == -1
        b = _rates([1.3] * 3, 0.05, plan, 400 + i)
        first = ((b["verdict"] == -1) & (b["runs"] == plan.first)).all(1).mean()
        c = _rates([1.0, 1.0, 1.7], 0.03, plan, 500 + i)
        at1 = ((c["verdict"][:, 2] == -1) & (c["runs"][:, 2] == plan.first)).mean()
        lines.append(
            f"{name:<26} {called.mean():17.4f}  {a['runs'][:, 2].mean():9.2f}  | "
            f"{first:39.4f} | {at1:.4f}"
        )
    lines += ["", "Power by runs a side, one look (a 1.2x speed-up at 9%, one mode):", ""]
    for n in (2, 3, 5, 10, 20, 40):
        got = _rates([1.2], 0.09, driver.SpeedPlan(n, n), 600 + n)
        lines.append(f"  {n:>2} runs a side: {(got['verdict'][:, 0] == -1).mean():.4f}")
    lines.append("")


def _family(rng, n, cases, sd, shift=0.0, looks=1, min_rounds=rounds.MIN_ROUNDS):
    a = np.exp(rng.normal(0, sd, (cases, n)))
    b = np.exp(rng.normal(0, sd, (cases, n)))
    b[0] *= math.exp(shift)
    fam = [("m", a[c], b[c]) for c in range(cases)]
    return [v["verdict"] for v in rounds.judge_family(fam, looks=looks, min_rounds=min_rounds)]


def _ab(rng, cases, sd, shift=0.0, least=5, most=7) -> tuple[list[str], int]:
    a = np.exp(rng.normal(0, sd, (cases, most)))
    b = np.exp(rng.normal(0, sd, (cases, most)))
    b[0] *= math.exp(shift)
    looks = most - least + 1
    for n in range(least, most + 1):
        words = [v["verdict"] for v in rounds.judge_family(
            [("m", a[c, :n], b[c, :n]) for c in range(cases)], looks=looks)]  # fmt: skip
        if rounds.decided(words):
            break
    return words, n


def moderated_rule(lines: list[str]) -> None:
    lines += [
        "## 3. compare's and ab's judge (moderated t, Holm over the cases)",
        "",
        f"{FAMILIES} simulated comparisons a figure; a round's log ~ N(0, SD) a case.",
        "A/A: share with any faster/slower call. `from 2`: moderating from 2 rounds a side "
        f"(what PRIOR_ROUNDS = {rounds.PRIOR_ROUNDS} replaces).",
        "",
        "rounds  cases  SD   A/A    A/A, moderated from 2",
    ]
    rng = np.random.default_rng(7)
    keep = rounds.PRIOR_ROUNDS
    for n in (2, 3, 5, 7):
        for cases in (4, 16):
            for sd in (0.01, 0.03):
                now = np.mean([any(w in rounds.VERDICTS_CALLED for w in _family(rng, n, cases, sd))
                               for _ in range(FAMILIES)])  # fmt: skip
                rounds.PRIOR_ROUNDS = 2
                try:
                    before = np.mean([
                        any(w in rounds.VERDICTS_CALLED for w in _family(rng, n, cases, sd))
                        for _ in range(FAMILIES)])  # fmt: skip
                finally:
                    rounds.PRIOR_ROUNDS = keep
                lines.append(f"{n:>6}  {cases:>5}  {sd:.0%}  {now:.4f} {before:.4f}")
    effect = math.log(1.2) / driver.BETWEEN_RUN_SD  # a 1.2x speed-up at 9%, in SDs
    lines += [
        "",
        f"ab's looks (5 to 7 rounds a side, alpha / 3 each), 8 cases: A/A, and a change of "
        f"{effect:.2f} SDs on one case (as 1.2x is at 9%): called, mean rounds a side",
        "",
    ]
    for sd in (0.01, 0.02, 0.03):
        aa = [_ab(rng, 8, sd)[0] for _ in range(FAMILIES // 3)]
        shifted = [_ab(rng, 8, sd, shift=-effect * sd) for _ in range(FAMILIES // 3)]
        false = np.mean([any(w in rounds.VERDICTS_CALLED for w in v) for v in aa])
        lines.append(
            f"  SD {sd:.0%}: A/A {false:.4f}"
            f"; called {np.mean([v[0] == 'faster' for v, _ in shifted]):.4f}, "
            f"{np.mean([n for _, n in shifted]):.2f} rounds"
        )
    lines += ["", "compare, one look, 8 cases, that change on one case, by rounds a side:", ""]
    for sd in (0.02, 0.03):
        for n in (5, 7, 10):
            got = np.mean([_family(rng, n, 8, sd, shift=-effect * sd)[0] == "faster"
                           for _ in range(FAMILIES // 3)])  # fmt: skip
            lines.append(f"  SD {sd:.0%}, {n:>2} rounds: called {got:.4f}")
    got = np.mean([_family(rng, 2, 4, 0.03, shift=-math.log(1.7))[0] == "faster"
                   for _ in range(FAMILIES)])  # fmt: skip
    lines += ["", f"compare, 2 rounds a side, 4 cases, 1.7x at 3% on one: called {got:.4f}", ""]


def main() -> None:
    lines = ["# The speed rules by simulation (scripts/speed_rule_sim.py)", ""]
    between_run_sd(lines, Path(sys.argv[1]) if len(sys.argv) > 1 else SWEEP)
    sweep_rule(lines)
    moderated_rule(lines)
    OUT.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
