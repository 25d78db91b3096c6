"""`ampbench quality`: the time-to-quality study (each recipe trained on real data over several
seeds to a held-out target, judged against fp32 by an equivalence test), or the finish of an
interrupted one (`--resume`, which may add recipes with `--add-modes` and seeds with
`--add-seeds`). The options beyond the study's settings are `bench.cli.quality_options`'."""

from __future__ import annotations

import argparse
import dataclasses

from bench.cases import checks
from bench.cli import argv, fields
from bench.cli import options as o
from bench.cli import quality_options as q_o
from bench.quality.config import PER_DEVICE, QualityConfig

NAME = "quality"


def add(sub: argparse._SubParsersAction) -> None:
    q = sub.add_parser(
        NAME,
        help="time to quality on real data: recipes against fp32 over seeds",
        description="Trains each recipe from the same weights per seed on real data "
        "(docs/quality.md); where a default differs per device, both are shown.",
    )
    o.add_preset(q, "shakespeare-char on a GPU, shakespeare-tiny on the CPU (gpt)")
    o.add_device(q)
    defaults = {f.name: f.default for f in dataclasses.fields(QualityConfig)}

    def both(key: str) -> str:
        gpu, cpu = (checks.shown(PER_DEVICE[d].get(key, defaults[key])) for d in ("cuda", "cpu"))
        return f"{gpu} on a GPU, {cpu} on the CPU"

    shown = {k: both(k) for k in PER_DEVICE["cpu"] if k != "preset"}
    fields.add(q, QualityConfig, defaults=shown)
    o.add_results_dir(q)
    o.add_tag(q)
    o.add_debug(q)
    o.add_resume(q, "train what an interrupted study left, with its settings")
    q_o.add(q)


def command(args: argparse.Namespace) -> int:
    from bench.jobs import quality as study  # pandas: none at parse time
    from bench.measure import env  # torch: none at parse time
    from bench.publish import quality_replicate, render  # pandas, matplotlib: none at parse time

    budget_s = q_o.budget_s(args)
    if args.resume is not None:
        argv.refuse_with_resume(args, q_o.WITH_RESUME)
        run_dir = study.resume(
            args.resume, add_modes=tuple(args.add_modes or ()),
            add_seeds=tuple(args.add_seeds or ()), workers=args.workers,
            budget_s=budget_s, only=tuple(args.only or ()), rerun_check=args.rerun_check,
        )  # fmt: skip
        render.after_job(run_dir)
        print(run_dir)
        return 0
    q_o.refuse_without_resume(args)
    given = fields.given(args, QualityConfig)
    if args.preset is not None:
        given["preset"] = args.preset
    with o.settings():
        cfg = study.config(env.device(args.device), given, budget=bool(args.budget))
    where = {"results_dir": argv.results_dir(args), "tag": args.tag, "budget_s": budget_s,
             "command": argv.command_line(args.argv, args.parser)}  # fmt: skip
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
