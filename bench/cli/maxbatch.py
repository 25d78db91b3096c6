"""`ampbench maxbatch`: the largest batch each mode trains, doubling and then bisecting."""

from __future__ import annotations

import argparse
import dataclasses

from bench.cases.maxbatch import CPU_DEFAULTS, MaxBatchConfig
from bench.cli import argv, fields
from bench.cli import options as o
from bench.faults import Interrupted

NAME = "maxbatch"


def add(sub: argparse._SubParsersAction) -> None:
    m = sub.add_parser(NAME, help="the largest batch each mode trains: doubling, then bisection")
    o.add_preset(m)
    o.add_device(m)
    gpu = {f.name: fields.shown_default(f) for f in dataclasses.fields(MaxBatchConfig)}
    on_cpu = {k: f"{gpu[k]} on a GPU, {v} on the CPU" for k, v in CPU_DEFAULTS.items()}
    fields.add(m, MaxBatchConfig, defaults=on_cpu)
    o.add_results_dir(m)
    o.add_tag(m)
    o.add_debug(m)


def command(args: argparse.Namespace) -> int:
    from bench.jobs import configs, maxbatch  # pandas, torch: none at parse time
    from bench.measure import env  # torch: none at parse time
    from bench.publish import render  # pandas: none at parse time

    with o.settings():
        cfg = configs.maxbatch_config(
            device=env.device(args.device),
            preset=args.preset,
            **fields.given(args, MaxBatchConfig),
        )
    try:
        run_dir = maxbatch.start(
            cfg,
            results_dir=argv.results_dir(args),
            command=argv.command_line(args.argv, args.parser),
            tag=args.tag,
        )
    except Interrupted as exc:  # the report of the trials kept, then the line
        if exc.folder is not None and exc.folder.is_dir():
            render.after_job(exc.folder)
        raise
    render.after_job(run_dir)
    print(run_dir)
    return 0
