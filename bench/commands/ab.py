"""`ampbench ab`: two revisions timed (`bench.jobs.ab`) and judged (`bench.publish.ab`)."""

from __future__ import annotations

import argparse
import sys

import torch

from bench.commands.gates import gates, memory_tolerance
from bench.commands.given import settings
from bench.faults import UsageError
from bench.jobs import ab as job
from bench.publish import ab

REFUSED = ("--resume", "--force")
"""Run options that make no sense for a new comparison."""


def run(args: argparse.Namespace) -> int:
    run_options = args.passed_on
    refused = [t for t in run_options if t.split("=")[0] in REFUSED]
    if refused:
        raise UsageError(f"ab makes new runs; drop {refused[0].split('=')[0]}")
    # The rounds' own command line, checked with `run`'s options: bad ones are one line here.
    run_args = args.parser.parse_args(["run", *run_options])
    chosen = ("rounds", "min_rounds", "statistic", "min_effect", "confidence")
    with settings():  # a value AbConfig refuses: one line, before anything runs
        cfg = job.AbConfig(
            rev_a=args.rev_a,
            rev_b=args.rev_b,
            run_options=tuple(run_options),
            memory_tolerance=memory_tolerance(args).spec(),
            **{k: getattr(args, k) for k in chosen if getattr(args, k) is not None},
        )
    folder = job.run(
        cfg,
        results_dir=args.results_dir,
        command=args.command_line,
        device=_device(run_args.device),
        tag=args.tag,
    )
    table, text = ab.write(folder)
    print(text)
    print(f"ampbench: wrote {folder / 'report.md'}", file=sys.stderr)
    print(folder)
    return gates(args, table, table.attrs["env_b"])


def _device(device: str) -> str:
    return device if device != "auto" else "cuda" if torch.cuda.is_available() else "cpu"
