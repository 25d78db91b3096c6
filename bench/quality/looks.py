"""A sequential time-to-quality study's looks (`bench.quality.job` trains them; docs/quality.md,
"Adding seeds in looks"), kept in its env.json so that `--resume` goes on from the last."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path

from bench.lifecycle.folder import log
from bench.quality import tables
from bench.quality.config import FP32, QualityConfig
from bench.store import results
from bench.verdicts import sequential, training

clock = time.monotonic
"""The clock a device-time budget is spent by (a test injects its own)."""

Train = Callable[[Path, QualityConfig, float, tuple[str, ...]], bool]
"""Trains the runs of a config's modes and seeds not yet trained (only the modes named),
within a budget in seconds (0: none); whether none was left for lack of it (the job's)."""


def design_of(cfg: QualityConfig, recorded: dict | None = None) -> sequential.Design | None:
    """A sequential study's plan (`sequential.planned`: the one its folder `recorded`, else
    a new one), or None for one look."""
    return sequential.planned(len(cfg.seeds), cfg.max_seeds, recorded)


def judge_looks(
    run_dir: Path, cfg: QualityConfig, looks: list[int]
) -> dict[str, sequential.Judged]:
    """Each mode's verdict over the looks taken (fp32, the reference, and modes without a
    finished run left out), by the design the folder recorded with its looks."""
    t = tables.load(run_dir)
    if t["curves"].empty:
        return {}
    summary = training.per_run(t["curves"], t["runs"])
    design = design_of(cfg, results.read_env(run_dir).get("design"))
    return sequential.judge_each(summary, cfg.modes, design, looks, cfg.seed_order())


def run(folder, cfg: QualityConfig, train: Train, budget_s: float, started: float) -> None:
    """Look after look: train the look's runs (fp32's and the undecided modes', by `train`),
    judge, and add seeds until every mode is decided, the cap, or the budget (spent since
    `started`, by `clock`). A resumed study passed its one guard before it got here
    (`bench.quality.commit.guard`): a look cut short trains the rest at the same code."""
    design, order = design_of(cfg, folder.info.get("design")), cfg.seed_order()
    looks = [int(n) for n in folder.info.get("looks", [])]
    while True:
        if looks:
            judged = judge_looks(folder.path, cfg, looks)
            todo = sequential.undecided(judged)
            n = design.next_look(looks[-1])
            if not todo or n is None:
                log("every mode decided" if not todo else f"the cap: {looks[-1]} seeds")
                break
        else:
            todo, n = [m for m in cfg.modes if m != FP32], design.first
        seeds = order[:n]
        left = budget_s - (clock() - started) if budget_s else 0
        if budget_s and left <= 0:
            log(f"the budget ends before the look at {n} seeds: --resume goes on")
            return
        log(f"look at {n} seeds: {', '.join((FP32, *todo))}")
        look = dataclasses.replace(cfg, seeds=seeds)
        if not train(folder.path, look, left, (FP32, *todo)):
            return  # the budget ended inside the look: --resume trains the rest
        looks.append(n)
        folder.info["looks"] = looks
        folder.info["design"] = design.record()
        folder.save()
    tables.compact(folder.path)
    folder.finish()
