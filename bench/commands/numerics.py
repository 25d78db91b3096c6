"""`ampbench numerics`: the study started or resumed (`bench.numerics.job`), and its failures."""

from __future__ import annotations

import argparse
import sys

from bench.commands.given import given, refuse_with_resume, settings
from bench.faults import UsageError
from bench.measure import env
from bench.numerics import job as numerics
from bench.numerics.analysis import failures
from bench.numerics.measure.config import NumericsConfig
from bench.publish import render


def run(args: argparse.Namespace) -> int:
    if args.resume is not None:
        added = tuple(args.add_modes or ())
        # With --add-modes, --trace-every may set the added jobs' trace period (a study older
        # than the traces recorded 0).
        extra = ("add_modes", "trace_every") if added else ("add_modes",)
        refuse_with_resume(args, ("resume", "force", "workers", "debug", *extra))
        trace_every = args.trace_every if added else None
        run_dir = numerics.resume(
            args.resume, workers=args.workers, force=args.force, add_modes=added,
            trace_every=trace_every,
        )  # fmt: skip
    else:
        if args.force:
            raise UsageError("--force goes with --resume")
        if args.add_modes:
            raise UsageError("--add-modes goes with --resume")
        options = given(args, NumericsConfig)
        workers = options.pop("workers", None)
        if args.preset is not None:
            options["preset"] = args.preset
        with settings():
            cfg = NumericsConfig.build(
                device=env.device(args.device), options=options, workers=workers
            )
        run_dir = numerics.start(
            cfg, results_dir=args.results_dir, tag=args.tag, command=args.command_line
        )
    render.after_job(run_dir)
    print(run_dir)
    failed = failures.failures(run_dir)  # the folder and its report are written either way
    if failed:
        print(f"ampbench: numerics: failed: {failed} (see {run_dir}/report.md)", file=sys.stderr)
    return 1 if failed else 0
