"""A time-to-quality study is one code (docs/quality.md, "A study is one commit"): what each run's
row records of the code that trained it, the one guard every `--resume` passes before anything in
the folder changes (whatever it trains: seeds a look cut short, added seeds or modes, unfinished
runs), and `--rerun-check`, which may vouch for other code by retraining one seed of every mode."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd
from scipy import stats

from bench.faults import UsageError
from bench.lifecycle.folder import Folder, log
from bench.measure import env
from bench.quality import tables
from bench.quality.config import FP32, QualityConfig
from bench.verdicts import training

CLEAN = "clean"
"""A `Code`'s changes where the tree held none."""
RERUN_ALPHA = 0.05
"""The chance that unchanged training fails the rerun check of some mode, at most (shared
among the modes rerun, Bonferroni)."""

Retrain = Callable[[str, int], float]
"""Trains one (mode, seed) of the study here; its best held-out loss (NaN: none finite)."""


@dataclass(frozen=True)
class Code:
    """The code a run trained at, as the guard compares it: its short commit and its changes
    (`CLEAN`, the hash of its diff, or None where they were not recorded)."""

    commit: str | None
    changes: str | None

    @classmethod
    def of(cls, record: dict) -> Code:
        """From a run's row or env.json (`commit`, `dirty`, `diff_hash`; absent keys: not
        known, as in rows written before they were kept)."""
        sha, dirty, diff = (record.get(k) for k in ("commit", "dirty", "diff_hash"))
        commit = sha[:7] if isinstance(sha, str) and sha else None
        if dirty is None or pd.isna(dirty):
            return cls(commit, None)
        if not dirty:
            return cls(commit, CLEAN)
        return cls(commit, diff if isinstance(diff, str) and diff else None)

    @property
    def known(self) -> bool:
        return self.commit is not None and self.changes is not None

    def __str__(self) -> str:
        if self.commit is None:
            return "an unrecorded commit"
        if self.changes == CLEAN:
            return self.commit
        if self.changes is None:
            return f"{self.commit} with uncommitted changes not recorded"
        return f"{self.commit} with uncommitted changes {self.changes}"


def made_by() -> dict[str, object]:
    """What each run's row records of the code training it (`bench.measure.env.code`)."""
    here = env.code()
    return {"commit": here.commit[:7] if here.commit else None, "dirty": here.dirty,
            "diff_hash": here.diff_hash, "commit_source": here.source}  # fmt: skip


def trained_at(folder: Folder) -> list[Code]:
    """The code of the study's start (env.json) and of each of its runs' rows, distinct, the
    start's first."""
    runs = tables.load(folder.path)["runs"]
    rows = runs.astype(object).where(runs.notna(), None).to_dict("records")
    return list(dict.fromkeys([Code.of(folder.info), *(Code.of(r) for r in rows)]))


def guard(
    folder: Folder, cfg: QualityConfig, *, rerun_check: bool, retrain: Retrain | None = None
) -> None:
    """Refuse (UsageError, one line) to train anything more into a study whose start or runs
    were at other code than this tree's: another commit, other uncommitted changes, or code not
    recorded. `rerun_check` on a GPU may vouch for it instead (`rerun`). Changes nothing."""
    here = Code.of(made_by())
    there = trained_at(folder)
    if here.known and there == [here]:
        return
    this = (
        f"this tree is {here}"
        if here.commit is not None
        else f"this tree's commit is not known (outside a git checkout, {env.OVERRIDE} names a "
        "copy's)"
    )
    said = f"it trained at {'; '.join(map(str, there))}, {this}"
    if not rerun_check:
        one = len(there) == 1 and there[0].known
        hint = f"resume it at {there[0]}" if one else "start a new study"
        raise UsageError(
            f"--resume {folder.path}: a study is one commit ({said}); {hint} (on a GPU, "
            "--rerun-check retrains one seed of every mode and allows it where each comes back "
            "within its rerun noise)"
        )
    if cfg.device != "cuda" or retrain is None:
        raise UsageError(
            f"--rerun-check on {cfg.device}: the check that training is unchanged runs on a "
            f"GPU only; a study is one commit ({said})"
        )
    rows = rerun(folder, cfg, retrain, said)  # raises before anything is kept
    folder.info.setdefault("reruns", []).extend(rows)


def tolerances(summary: pd.DataFrame, modes: list[str]) -> dict[str, dict[str, float]]:
    """Per mode, how far a rerun of one seed may land from its stored best held-out loss: z ×
    √2 × the mode's seed SD in this study. A rerun shares the seed's weights, batches and
    dropout, so it differs from the stored run by no more than two seeds differ (SD √2 × the
    seed SD); z = Φ⁻¹(1 − RERUN_ALPHA / 2k) over the k modes, so unchanged training fails no
    mode's check in at least 1 − RERUN_ALPHA of reruns. NaN where fewer than 2 seeds finished."""
    z = float(stats.norm.isf(RERUN_ALPHA / (2 * max(len(modes), 1))))
    out = {}
    for m in modes:
        losses = summary[(summary["mode"] == m) & (summary["status"] == "ok")]["best_loss"]
        sd = float(losses.std(ddof=1)) if losses.count() > 1 else math.nan
        out[m] = {"seed_sd": sd, "z": z, "tolerance": z * math.sqrt(2) * sd}
    return out


def rerun(folder: Folder, cfg: QualityConfig, retrain: Retrain, said: str = "") -> list[dict]:
    """Retrain the first finished seed of every mode of the study; its rows (stored and rerun
    best held-out loss, how far apart, the tolerance and how it was derived). UsageError before
    training where a mode's tolerance cannot be derived or reaches the margin (a rerun could not
    tell a change of the margin's size from noise), and after it where a rerun lands outside."""
    t = tables.load(folder.path)
    summary = training.per_run(t["curves"], t["runs"])
    margin = training.margin_of(summary).value
    modes = [m for m in cfg.modes if m in set(summary["mode"])]
    if not margin > 0:
        raise UsageError(f"--rerun-check: {folder.path} has no finished {FP32} seed; {said}")
    limits = tolerances(summary, modes)
    for m, lim in limits.items():
        if math.isnan(lim["tolerance"]):
            raise UsageError(
                f"--rerun-check: {m} has fewer than 2 finished seeds, too few to measure how "
                f"far a rerun lands; {said}"
            )
        if not lim["tolerance"] < margin:
            raise UsageError(
                f"--rerun-check: {m}'s seeds spread {lim['seed_sd']:.2g} (SD), so a rerun may "
                f"land {lim['tolerance']:.2g} away unchanged, not below the margin "
                f"{margin:.2g}: a rerun cannot tell a change of the margin from noise; {said}"
            )
    sha = made_by()["commit"]
    rows = []
    for m in modes:
        ok = summary[(summary["mode"] == m) & (summary["status"] == "ok")].sort_values("seed")
        seed, stored = int(ok["seed"].iloc[0]), float(ok["best_loss"].iloc[0])
        log(f"rerun check: {m} seed {seed} again")
        again = retrain(m, seed)
        rows.append({"mode": m, "seed": seed, "stored": stored, "rerun": again,
                     "apart": abs(again - stored), **limits[m], "commit": sha})  # fmt: skip
    outside = [r for r in rows if not r["apart"] <= r["tolerance"]]
    if outside:
        r = outside[0]
        raise UsageError(
            f"--rerun-check: {r['mode']} seed {r['seed']}'s best held-out loss {r['rerun']:.4g} "
            f"here against {r['stored']:.4g} stored, {r['apart']:.2g} apart, beyond its "
            f"tolerance {r['tolerance']:.2g} ({len(outside)} of {len(rows)} modes outside); "
            f"{said}"
        )
    return rows
