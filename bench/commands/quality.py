"""`ampbench quality`: the study started, replicated or resumed (`bench.quality.job`)."""

from __future__ import annotations

import argparse

from bench.commands.given import given, refuse_with_resume, settings
from bench.faults import UsageError
from bench.measure import env
from bench.publish import render
from bench.quality import job as study
from bench.quality.config import QualityConfig
from bench.quality.render import replicate as quality_replicate

WITH_RESUME = ("resume", "force", "workers", "debug", "add_modes", "add_seeds", "budget_s",
               "budget", "only", "rerun_check")  # fmt: skip
"""The options a resume takes; its settings come from the study's folder."""


def run(args: argparse.Namespace) -> int:
    budget_s = _budget_s(args)
    if args.resume is not None:
        refuse_with_resume(args, WITH_RESUME)
        run_dir = study.resume(
            args.resume, add_modes=tuple(args.add_modes or ()),
            add_seeds=tuple(args.add_seeds or ()), workers=args.workers,
            budget_s=budget_s, only=tuple(args.only or ()), rerun_check=args.rerun_check,
        )  # fmt: skip
        render.after_job(run_dir)
        print(run_dir)
        return 0
    # The options that add to or finish a study go with `--resume` only.
    if args.add_modes or args.add_seeds or args.force or args.only or args.rerun_check:
        raise UsageError(
            "--add-modes, --add-seeds, --only, --rerun-check and --force go with --resume"
        )
    options = given(args, QualityConfig)
    if args.preset is not None:
        options["preset"] = args.preset
    with settings():
        cfg = study.config(env.device(args.device), options, budget=bool(args.budget))
    where = {"results_dir": args.results_dir, "tag": args.tag, "budget_s": budget_s,
             "command": args.command_line}  # fmt: skip
    # Each study's report is written as it ends, before a replica's second study trains.
    runs = study.replicate(cfg, **where) if args.replicate else [study.start(cfg, **where)]
    dirs = []
    for run_dir in runs:
        render.after_job(run_dir)
        print(run_dir)
        dirs.append(run_dir)
    if args.replicate:
        print(quality_replicate.write(*dirs))
    return 0


def _budget_s(args: argparse.Namespace) -> float:
    """The device time the command may train for: `--budget` or `--budget-s`, not both (0:
    no budget)."""
    if args.budget and args.budget_s:
        raise UsageError(f"--budget {args.budget:g}s and --budget-s {args.budget_s:g}: give one")
    return args.budget or args.budget_s
