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
               "budget", "only", "rerun_check")  # fmt: skip
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
        "--budget",
        type=o.converter(checks.DURATION),
        default=0,
        help="device time this command may train for (900s, 15m, 1h): a sequential study "
        "(--max-seeds, else 8) starts no look past it; --resume goes on",
    )
    q.add_argument(
        "--rerun-check",
        action="store_true",
        help="with --resume at another commit, on a GPU: retrain one of fp32's seeds and add "
        "seeds only if its best held-out loss comes back within the margin",
    )
    q.add_argument(
        "--replicate",
        action="store_true",
        help="run the study twice on disjoint seeds (the second's start at "
        "1000) and say whether any verdict contradicts the other",
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

    if args.budget and args.budget_s:
        raise UsageError(f"--budget {args.budget:g}s and --budget-s {args.budget_s:g}: give one")
    budget_s = args.budget or args.budget_s
    if args.resume is not None:
        argv.refuse_with_resume(args, WITH_RESUME)
        run_dir = study.resume(
            args.resume, add_modes=tuple(args.add_modes or ()),
            add_seeds=tuple(args.add_seeds or ()), workers=args.workers,
            budget_s=budget_s, only=tuple(args.only or ()), rerun_check=args.rerun_check,
        )  # fmt: skip
        render.after_job(run_dir)
        print(run_dir)
        return 0
    if args.add_modes or args.add_seeds or args.force or args.only or args.rerun_check:
        raise UsageError(
            "--add-modes, --add-seeds, --only, --rerun-check and --force go with --resume"
        )
    given = fields.given(args, QualityConfig)
    if args.preset is not None:
        given["preset"] = args.preset
    if args.budget and "max_seeds" not in given:
        from bench.verdicts.sequential import DEFAULT_MAX_SEEDS  # scipy: none at parse time

        given["max_seeds"] = DEFAULT_MAX_SEEDS
    with o.settings():
        cfg = QualityConfig.build(env.device(args.device), given)
    studies = [cfg]
    if args.replicate:
        offset = study.REPLICA_OFFSET
        if max(cfg.seed_order()) >= offset:
            raise UsageError(
                f"--replicate: seeds reach {max(cfg.seed_order())}, not below {offset}"
            )
        studies.append(dataclasses.replace(cfg, seeds=tuple(s + offset for s in cfg.seeds)))
    dirs = []
    for i, one in enumerate(studies):
        tag = (
            args.tag
            if not args.replicate
            else "-".join(filter(None, (args.tag, f"replica{i + 1}")))
        )
        dirs.append(
            study.start(
                one, results_dir=argv.results_dir(args), tag=tag,
                command=argv.command_line(args.argv, args.parser), budget_s=budget_s,
            )
        )  # fmt: skip
        render.after_job(dirs[-1])
        print(dirs[-1])
    if args.replicate:
        from bench.publish import quality_replicate  # pandas: none at parse time

        print(quality_replicate.write(*dirs))
    return 0
