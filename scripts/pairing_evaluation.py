"""Pairing by seed, decided in advance: the training rule's equivalence test on the per-seed
differences (a paired t, n − 1 degrees of freedom) against Welch's t on two independent sides,
each inside the rule's own designs (the group-sequential one, `bench.verdicts.sequential`, and
one look at a fixed number of seeds), at the same levels.

1. By seeded simulation, for each design, spread and correlation between a mode's seed and
   fp32's at the same seed: the false-equivalence rate at ±margin (over the looks) and the power
   (a mode like fp32 called within the margin), with the seeds a side a study stopped at.
2. The rule that adopts pairing or not, per design, from the simulation alone (`RULE`): it is
   applied before any committed study's verdict is computed, and reads none.
3. Every committed study (the quality studies' folders and the sweep folders under results/),
   read by the code's own readers: per mode its verdict, interval and the seeds the rule needs
   under each test.

The spreads simulated are the committed studies' own (fp32's seed SD, and the median seed SD of
their other modes, with their margins): the simulation reads their spreads, never their gaps.

Usage, from the repository root: `PYTHONPATH=. python scripts/pairing_evaluation.py [OUT]`
(OUT: results/sessions/pairing_evaluation.md). Runs in well under a minute on one core.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from bench.ownloop import render as own_loop
from bench.quality.render import report as quality_report
from bench.store import results
from bench.text.tables import markdown
from bench.verdicts import equivalence, sequential, training

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "results" / "sessions" / "pairing_evaluation.md"
STUDIES = 20_000
"""Simulated studies per cell (seeded): a rate's standard error is at most 0.0035."""
CORRELATIONS = (0.0, 0.3, 0.6, 0.9)
DESIGNS = {
    "sequential 3→8 seeds": sequential.Design(first=3, max_seeds=sequential.DEFAULT_MAX_SEEDS),
    "one look at 3 seeds": None,
    "one look at 5 seeds": None,
}
"""The designs a study can have: `--max-seeds 8` (or `--budget`), and one look at its seeds."""
ONE_LOOK = {"one look at 3 seeds": 3, "one look at 5 seeds": 5}
TESTS = ("welch", "paired, normal levels", "paired")
"""Welch's t at the design's levels (the rule until now); the paired t at the same levels; the
paired t at its own levels (`bench.verdicts.sequential.paired_levels`, the same spending). At one
look the two paired ones are one test."""


@dataclass(frozen=True)
class Rule:
    """Pairing is adopted for a design where all three hold over every simulated cell."""

    slack_se: float = 3.0
    """False equivalence at ±margin at most alpha plus this many binomial standard errors."""
    max_loss: float = 0.05
    """Paired power at least Welch's minus this, at every correlation (0 included) ..."""
    max_more_seeds: float = 0.10
    """... and its mean seeds a side at most this share above Welch's."""
    min_gain: float = 0.05
    """At correlation 0.9, on average over the spreads: paired power above Welch's by this, or
    its mean seeds a side below Welch's by this share."""

    def text(self) -> str:
        return (
            "Pairing is adopted for a design (the sequential one, or one look) where, in every "
            "simulated cell of that design: (1) the paired test's false-equivalence rate at "
            f"+margin and at −margin is at most alpha + {self.slack_se:g} standard errors of the "
            f"simulation; (2) its power is at least Welch's minus {self.max_loss:.0%} (absolute), "
            f"and its mean seeds a side at most {self.max_more_seeds:.0%} above Welch's, at every "
            "correlation, 0 included; (3) at correlation 0.9, on average over the spreads, its "
            f"power is at least {self.min_gain:.0%} above Welch's or its mean seeds a side at "
            f"least {self.min_gain:.0%} below. Otherwise the design keeps Welch's t. The rule "
            "reads the simulation only, and was applied before any committed study's paired "
            "verdict was read."
        )


RULE = Rule()


def _classify(low: np.ndarray, high: np.ndarray, m: float) -> np.ndarray:
    """`training.classify` over arrays: 0 not known, 1 within, 2 outside (worse or better)."""
    within = (low > -m) & (high < m)
    outside = (low > m) | (high < -m)
    return np.where(within, 1, np.where(outside, 2, 0))


def simulate(
    design: sequential.Design | None,
    n_one: int,
    sd_ref: float,
    sd: float,
    rho: float,
    shift: float,
    m: float,
    seed: int,
) -> dict[str, dict[str, float]]:
    """Per test (`TESTS`): the share of studies called within the margin, and the mean seeds a
    side at the look that stopped. Every test reads the same draws: fp32's seeds
    normal with SD `sd_ref`, the mode's with SD `sd`, correlated `rho` seed by seed, its mean
    `shift` above fp32's."""
    rng = np.random.default_rng(seed)
    top = design.max_seeds if design else n_one
    z1, z2 = rng.standard_normal((2, STUDIES, top))
    ref = sd_ref * z1
    x = shift + sd * (rho * z1 + math.sqrt(1 - rho**2) * z2)
    if design is None:  # one look at the fixed 90% interval, as `trains_like_fp32` judges it
        looks, conservative = (n_one,), False
        levels = dict.fromkeys(TESTS, (equivalence.ALPHA,))
    else:  # the look's level from the spending; Welch at min(n, k) − 1 degrees of freedom
        looks, conservative = design.looks(), True
        normal = dataclasses.replace(design, paired=False).levels(looks)
        own = dataclasses.replace(design, paired=True).levels(looks)
        levels = {"welch": normal, "paired, normal levels": normal, "paired": own}
    out = {}
    for test in TESTS:
        paired = test != "welch"
        word = np.zeros(STUDIES, dtype=int)
        stop = np.full(STUDIES, looks[-1])
        open_ = np.ones(STUDIES, dtype=bool)
        for n, level in zip(looks, levels[test], strict=True):
            _, low, high = equivalence.interval(
                x[:, :n], ref[:, :n], level, paired=paired, conservative=conservative
            )
            w = _classify(low, high, m)
            now = open_ & (w != 0)
            word[now], stop[now] = w[now], n
            open_ &= ~now
        out[test] = {"within": float(np.mean(word == 1)), "seeds": float(stop.mean())}
    return out


@dataclass(frozen=True)
class Spread:
    """A simulated spread: a committed study's margin, fp32's seed SD, a mode's seed SD."""

    study: str
    m: float
    sd_ref: float
    sd: float
    which: str


def _study_name(path: Path) -> str:
    return path.name.split("_quality_")[-1] if "_quality_" in path.name else path.name


def quality_folders() -> list[Path]:
    return sorted(p for p in (ROOT / "results").glob("*_quality_*") if p.is_dir())


def sweep_folders() -> list[Path]:
    """Folders the sweep driver wrote (sweep.md, or recipes.md while it was `recipes`)."""
    found = {
        p.parent
        for name in (own_loop.SWEEP_MD, own_loop.OLD_SWEEP_MD)
        for p in (ROOT / "results").rglob(name)
    }
    return sorted(found)


def sweep_summary(path: Path) -> tuple[pd.DataFrame, str]:
    """A sweep folder's per-run summary, by the sweep's own reader."""
    rows = pd.DataFrame(results.read_rows(path / results.ROWS))
    _, summary, metric, why = own_loop.judge_training(path, rows, None)
    return summary, f"{metric}" if metric else why


def studies() -> list[tuple[str, str, pd.DataFrame, dict]]:
    """(name, kind, per-run summary, what the study declared) of every committed study."""
    out = []
    for path in quality_folders():
        s = quality_report.study(path)
        declared = {"looks": s["looks"], "cfg": s["cfg"]}
        out.append((_study_name(path), "quality", s["summary"], declared))
    for path in sweep_folders():
        summary, _ = sweep_summary(path)
        info = results.read_env(path)
        out.append((path.name, "sweep", summary, {"looks": info.get("looks") or [], "info": info}))
    return out


def spreads(found: list[tuple[str, str, pd.DataFrame, dict]]) -> list[Spread]:
    """Per study where fp32 gives a margin: fp32's seed SD, and as the mode's either fp32's own
    or the median seed SD of the study's other modes."""
    out = []
    for name, _, summary, _ in found:
        if summary.empty:
            continue
        mg = training.margin_of(summary)
        ok = summary[summary["status"] == "ok"]
        sds = ok.groupby("mode")["best_loss"].std(ddof=1).dropna()
        if math.isnan(mg.value) or training.REFERENCE not in sds:
            continue
        others = float(sds.drop(training.REFERENCE).median())
        out.append(Spread(name, mg.value, mg.reference_sd, mg.reference_sd, "alike"))
        out.append(Spread(name, mg.value, mg.reference_sd, others, "median mode"))
    return out


def simulation(cells: list[Spread]) -> pd.DataFrame:
    rows = []
    for d, (name, design) in enumerate(DESIGNS.items()):
        for c, sp in enumerate(cells):
            for r, rho in enumerate(CORRELATIONS):
                row = {"design": name, "study": sp.study, "mode SD": sp.which, "margin": sp.m,
                       "fp32 SD": sp.sd_ref, "mode's SD": sp.sd, "rho": rho}  # fmt: skip
                for k, (label, shift) in enumerate(
                    (("false +m", sp.m), ("false -m", -sp.m), ("power", 0.0))
                ):
                    seed = 1000 * d + 100 * c + 10 * r + k
                    got = simulate(
                        design, ONE_LOOK.get(name, 0), sp.sd_ref, sp.sd, rho, shift, sp.m, seed
                    )
                    for test in TESTS:
                        row[f"{label} {test}"] = got[test]["within"]
                        if label == "power":
                            row[f"seeds {test}"] = got[test]["seeds"]
                rows.append(row)
    return pd.DataFrame(rows)


def decide(sim: pd.DataFrame, rule: Rule = RULE) -> dict[str, tuple[bool, list[str]]]:
    """Per design: whether the rule adopts pairing, and the clause each failure breaks. Reads the
    simulation only."""
    alpha = equivalence.ALPHA
    limit = alpha + rule.slack_se * math.sqrt(alpha * (1 - alpha) / STUDIES)
    out = {}
    for design, g in sim.groupby("design", sort=False):
        why = []
        worst = float(g[["false +m paired", "false -m paired"]].max().max())
        if worst > limit:
            why.append(f"false equivalence up to {worst:.4f}, above {limit:.4f}")
        loss = float((g["power welch"] - g["power paired"]).max())
        if loss > rule.max_loss:
            at = g.loc[(g["power welch"] - g["power paired"]).idxmax()]
            why.append(
                f"power below Welch's by up to {loss:.3f} ({at['study']}, {at['mode SD']}, "
                f"correlation {at['rho']:g})"
            )
        more = float((g["seeds paired"] / g["seeds welch"]).max() - 1)
        if more > rule.max_more_seeds:
            why.append(f"up to {more:.1%} more seeds a side than Welch's")
        high = g[g["rho"] == max(CORRELATIONS)]
        gain = float((high["power paired"] - high["power welch"]).mean())
        fewer = float(1 - high["seeds paired"].mean() / high["seeds welch"].mean())
        if gain < rule.min_gain and fewer < rule.min_gain:
            why.append(
                f"at correlation {max(CORRELATIONS):g}, a mean power gain of {gain:.3f} and "
                f"{fewer:.1%} fewer seeds"
            )
        out[design] = (not why, why)
    return out


def judged(summary: pd.DataFrame, mode: str, declared: dict, paired: bool) -> training.Verdict:
    """The mode's verdict under one test, in the study's own design: its looks where it took
    them (sequential), else one look at its seeds."""
    looks = declared.get("looks") or []
    if looks and "cfg" in declared:
        cfg = declared["cfg"]
        design = sequential.Design(len(cfg.seeds), cfg.max_seeds, paired=paired)
        order = cfg.seed_order()
        return sequential.judge(summary, mode, design, looks, order, synthetic=False).verdict
    if looks:
        info = declared["info"]
        design = sequential.Design.from_record({**info["design"], "paired": paired})
        return sequential.judge(
            summary, mode, design, looks, info["seed_order"], synthetic=False
        ).verdict
    return training.trains_like_fp32(summary, mode, synthetic=False, paired=paired)


def committed(found: list[tuple[str, str, pd.DataFrame, dict]]) -> pd.DataFrame:
    rows = []
    for name, kind, summary, declared in found:
        if summary.empty:
            continue
        ok = summary[summary["status"] == "ok"]
        wide = ok.pivot(index="seed", columns="mode", values="best_loss")
        mg = training.margin_of(summary)
        for mode in [m for m in dict.fromkeys(summary["mode"]) if m != training.REFERENCE]:
            row = {"study": name, "kind": kind, "mode": mode}
            if mode in wide and training.REFERENCE in wide:
                both = wide[[mode, training.REFERENCE]].dropna()
                d = both[mode] - both[training.REFERENCE]
                row["pairs"] = len(both)
                row["rho"] = float(both.corr().iloc[0, 1]) if len(both) > 2 else math.nan
                row["SD of differences"] = float(d.std(ddof=1)) if len(d) > 1 else math.nan
            for paired, test in ((False, "welch"), (True, "paired")):
                v = judged(summary, mode, declared, paired)
                row[f"{test}"] = v.verdict
                row[f"{test} interval"] = (
                    f"[{v.low:+.4f}, {v.high:+.4f}]" if not math.isnan(v.low) else "–"
                )
                x = ok[ok["mode"] == mode].set_index("seed")["best_loss"]
                r = ok[ok["mode"] == training.REFERENCE].set_index("seed")["best_loss"]
                if paired:
                    x, r = training.pair(x, r)
                need = (
                    equivalence.mode_seeds_needed(x, r, mg.value, paired=paired)
                    if len(x) > 1 and not math.isnan(mg.value)
                    else math.nan
                )
                row[f"{test} seeds needed"] = (
                    f"> {equivalence.MAX_SEEDS}" if need > equivalence.MAX_SEEDS else need
                )
            rows.append(row)
    return pd.DataFrame(rows)


def replayed(found: list[tuple[str, str, pd.DataFrame, dict]]) -> pd.DataFrame:
    """Each committed study's seeds judged as the sequential design (first look 3, cap
    `DEFAULT_MAX_SEEDS`) would have judged them, looking at 3, 4, ... up to the seeds it has:
    per mode and test, the verdict and the seeds a side of the look that decided it."""
    rows = []
    for name, _, summary, _ in found:
        if summary.empty:
            continue
        ok = summary[summary["status"] == "ok"]
        order = sorted(ok.loc[ok["mode"] == training.REFERENCE, "seed"].astype(int))
        if len(order) < equivalence.MIN_SEEDS:
            continue
        looks = tuple(range(equivalence.MIN_SEEDS, len(order) + 1))
        for mode in [m for m in dict.fromkeys(summary["mode"]) if m != training.REFERENCE]:
            row = {"study": name, "mode": mode, "looks": ", ".join(map(str, looks))}
            for paired, test in ((False, "welch"), (True, "paired")):
                design = sequential.Design(
                    equivalence.MIN_SEEDS, sequential.DEFAULT_MAX_SEEDS, paired=paired
                )
                j = sequential.judge(summary, mode, design, looks, order, synthetic=False)
                row[test] = f"{j.verdict.verdict} at {j.seeds}" if j.decided else j.verdict.verdict
            rows.append(row)
    return pd.DataFrame(rows)


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def render(
    sim: pd.DataFrame, decision: dict, table: pd.DataFrame, replay: pd.DataFrame, took_s: float
) -> str:
    alpha = equivalence.ALPHA
    lines = [
        "# Pairing by seed: the paired equivalence test against Welch's, decided in advance",
        "",
        f"Made by `scripts/pairing_evaluation.py` in {took_s:.0f} s ({STUDIES} seeded studies "
        "per cell). Each mode of a seed starts from fp32's initial weights and sees its batches, "
        "so a study's seeds pair: the paired test judges each seed's mode − fp32 (a paired t, "
        "n − 1 degrees of freedom); Welch's judges the two sides as independent (min(n, k) − 1 "
        "degrees of freedom at a sequential look, Welch–Satterthwaite's at one look). Both are "
        f"two one-sided tests at the design's levels ({alpha:.0%} a side, spent over the looks "
        "by the Pocock-type function in the sequential design).",
        "",
        "## The rule, fixed before the committed studies were judged",
        "",
        RULE.text(),
        "",
        "## The decision",
        "",
    ]
    for design, (adopt, why) in decision.items():
        said = "paired" if adopt else "Welch's t kept: " + "; ".join(why)
        lines.append(f"- **{design}**: {said}.")
    lines += [
        "",
        "## Simulation",
        "",
        "Rates in percent. `false ±m`: a mode whose true gap is exactly ±margin called within the "
        f"margin (at most {alpha:.0%} is the design's promise), over every look. `power`: a mode "
        "whose mean is fp32's called within the margin. `seeds`: the mean seeds a side at the "
        "look that stopped (a mode like fp32). `rho`: the correlation of a mode's seed with "
        "fp32's at the same seed. `paired, normal levels`: the paired t at the levels the design "
        "gives Welch's (the normal statistic's); `paired`: at its own levels, the same alpha spent "
        "at each look (`bench.verdicts.sequential.paired_levels`); at one look they are one test. "
        "The spreads: each committed study's margin and fp32's seed SD, with the mode's SD "
        "fp32's own (`alike`) or the median of the study's other modes.",
        "",
    ]
    spreads = sim[["study", "mode SD", "margin", "fp32 SD", "mode's SD"]].drop_duplicates()
    spreads.insert(0, "spread", [f"S{k + 1}" for k in range(len(spreads))])
    label = {(r["study"], r["mode SD"]): r["spread"] for _, r in spreads.iterrows()}
    shown = {c: spreads[c].map(lambda v: f"{v:.3g}") for c in ("margin", "fp32 SD", "mode's SD")}
    lines += [markdown(spreads.assign(**shown)), ""]
    for design, g in sim.groupby("design", sort=False):
        tests = TESTS if design not in ONE_LOOK else ("welch", "paired")
        show = pd.DataFrame(
            {
                "spread": [label[(a, b)] for a, b in zip(g["study"], g["mode SD"], strict=True)],
                "rho": g["rho"].map(lambda v: f"{v:g}"),
                **{
                    f"{lab} {t}": g[f"{lab} {t}"].map(_pct)
                    for lab in ("false +m", "false -m", "power")
                    for t in tests
                },
                "seeds welch": g["seeds welch"].map(lambda v: f"{v:.2f}"),
                "seeds paired": g["seeds paired"].map(lambda v: f"{v:.2f}"),
            }
        )
        summary = g.groupby("rho")[["power welch", "power paired", "seeds welch",
                                    "seeds paired"]].mean()  # fmt: skip
        lines += [f"### {design}", "", markdown(show), ""]
        lines.append(
            "Mean over the spreads, by correlation, Welch → paired: "
            + "; ".join(
                f"{rho:g}: power {_pct(r['power welch'])} → {_pct(r['power paired'])}, seeds "
                f"{r['seeds welch']:.2f} → {r['seeds paired']:.2f}"
                for rho, r in summary.iterrows()
            )
            + ". Highest false-equivalence rate: "
            + ", ".join(
                f"{t} {_pct(g[[f'false +m {t}', f'false -m {t}']].max().max())}" for t in tests
            )
            + "."
        )
        diff = g["power paired"] - g["power welch"]
        lo, hi = g.loc[diff.idxmin()], g.loc[diff.idxmax()]
        lines.append(
            f"Paired against Welch's, power: at worst {_pct(diff.min())} points "
            f"({label[(lo['study'], lo['mode SD'])]}, correlation {lo['rho']:g}: "
            f"{_pct(lo['power welch'])} → {_pct(lo['power paired'])}), at best {_pct(diff.max())} "
            f"({label[(hi['study'], hi['mode SD'])]}, correlation {hi['rho']:g}: "
            f"{_pct(hi['power welch'])} → {_pct(hi['power paired'])})."
        )
        lines.append("")
    lines += [
        "## The committed studies under each test",
        "",
        "Each study in its own design (none of the committed ones took looks: one look at its "
        "seeds, the fixed 90% interval). `pairs`: seeds where both the mode and fp32 finished; "
        "`rho`: their correlation over those seeds (from 3–5 seeds, a loose estimate); `seeds "
        "needed`: for an 80% chance to call a mode like fp32 within the margin, from the spreads "
        "at their 90% upper bound (Welch: both sides'; paired: the differences').",
        "",
        markdown(table.round({"rho": 2, "SD of differences": 4})),
        "",
    ]
    adopted = [d for d, (yes, _) in decision.items() if yes]
    lines.append(
        "Under the rule adopted (paired in: "
        + (", ".join(adopted) if adopted else "no design")
        + "), a study's test follows its own design: a committed study of one look keeps "
        "Welch's t, so its verdicts do not change. The paired columns say what the paired test "
        "would have said of the same seeds at one look."
    )
    lines.append("")
    at_one_look = "At one look, verdicts that differ between the two tests"
    lines.append(_differing(at_one_look, table, "none"))
    lines += [
        "",
        "### The same seeds as the sequential design would have judged them",
        "",
        "Each study's seeds in order, looked at 3, 4, ... up to the seeds it has, at the "
        f"sequential design's levels (first look 3, cap {sequential.DEFAULT_MAX_SEEDS}): the "
        "verdict and the seeds a side of the look that decided it (`not known`: none did).",
        "",
        markdown(replay),
        "",
    ]
    lines.append(_differing("Where the two differ", replay, "nowhere"))
    return "\n".join(lines) + "\n"


def _differing(lead: str, table: pd.DataFrame, none: str) -> str:
    """The rows whose Welch and paired verdicts differ, as one sentence."""
    rows = table[table["welch"] != table["paired"]]
    said = "; ".join(f"{r.study} {r.mode}: {r.welch} → {r.paired}" for r in rows.itertuples())
    return f"{lead}: {said or none}."


def main(out: Path = OUT) -> None:
    started = time.monotonic()
    found = studies()
    sim = simulation(spreads(found))
    decision = decide(sim)  # fixed from the simulation alone, before any paired verdict
    table, replay = committed(found), replayed(found)
    out.write_text(render(sim, decision, table, replay, time.monotonic() - started))
    print(f"wrote {out}")
    for design, (adopt, why) in decision.items():
        print(design, "paired" if adopt else f"Welch: {why}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)
