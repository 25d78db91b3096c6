"""`ampbench maxbatch`: the largest-batch search (`bench.jobs.maxbatch`) and its report."""

from __future__ import annotations

import argparse

from bench.cases.maxbatch import MaxBatchConfig
from bench.commands.given import given, settings
from bench.faults import Interrupted
from bench.jobs import configs, maxbatch
from bench.measure import env
from bench.publish import render


def run(args: argparse.Namespace) -> int:
    with settings():
        cfg = configs.maxbatch_config(
            device=env.device(args.device), preset=args.preset, **given(args, MaxBatchConfig)
        )
    try:
        run_dir = maxbatch.start(
            cfg, results_dir=args.results_dir, command=args.command_line, tag=args.tag
        )
    except Interrupted as exc:  # the report of the trials kept, then the line
        if exc.folder is not None and exc.folder.is_dir():
            render.after_job(exc.folder)
        raise
    render.after_job(run_dir)
    print(run_dir)
    return 0
