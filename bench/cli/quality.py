"""`ampbench quality`: the time-to-quality study (each recipe trained on real data over several
seeds to a held-out target, judged against fp32 by an equivalence test), or the finish of an
interrupted one (`--resume`, which may add recipes with `--add-modes` and seeds with
`--add-seeds`)."""

from __future__ import annotations

import argparse
import dataclasses

from bench.cases import checks
from bench.cli import argv, fields
from bench.cli import options as o
from bench.faults import UsageError
from bench.quality.config import PER_DEVICE, QualityConfig
from bench.recipes import catalog

NAME = "quality"
WITH_RESUME = ("resume", "force", "workers", "debug", "add_modes", "add_seeds", "budget_s",
               "only")  # fmt: skip
"""The options a resume takes; its settings come from the study's folder."""


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
    q.add_argument(
        "--budget-s",
        type=o.converter(checks.POSITIVE_FINITE),
        default=0,
        help="train only the runs whose cost (steps × each recipe's step time, measured first) "
        "fits this many seconds, fp32's first; `--resume` trains the rest",
    )
    q.add_argument(
        "--only",
        type=o.converter(checks.choice(catalog.CARDS), "mode", items=True),
        help="with --resume: train only these recipes' runs this time (a study split over "
        "several sessions)",
    )
    q.add_argument(
        "--add-modes",
        type=o.converter(checks.choice(catalog.CARDS), "mode", items=True),
        help="with --resume: add these recipes to the study and train them",
    )
    q.add_argument(
        "--add-seeds",
        type=o.converter(checks.NON_NEGATIVE_INT, "seed", items=True),
        help="with --resume: add these seeds to the study and train every recipe on them (where "
        "the study names how many seeds its margin rule needs)",
    )


def command(args: argparse.Namespace) -> int:
    from bench.jobs import quality as study  # pandas: none at parse time
    from bench.measure import env  # torch: none at parse time
    from bench.publish import render  # pandas: none at parse time

    if args.resume is not None:
        argv.refuse_with_resume(args, WITH_RESUME)
        run_dir = study.resume(
            args.resume, add_modes=tuple(args.add_modes or ()),
            add_seeds=tuple(args.add_seeds or ()), workers=args.workers,
            budget_s=args.budget_s, only=tuple(args.only or ()),
        )  # fmt: skip
    else:
        if args.add_modes or args.add_seeds or args.force or args.only:
            raise UsageError("--add-modes, --add-seeds, --only and --force go with --resume")
        given = fields.given(args, QualityConfig)
        if args.preset is not None:
            given["preset"] = args.preset
        with o.settings():
            cfg = QualityConfig.build(env.device(args.device), given)
        run_dir = study.start(
            cfg, results_dir=argv.results_dir(args), tag=args.tag,
            command=argv.command_line(args.argv, args.parser), budget_s=args.budget_s,
        )  # fmt: skip
    render.after_job(run_dir)
    print(run_dir)
    return 0
