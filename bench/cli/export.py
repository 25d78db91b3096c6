"""`ampbench export RUN`: a run's timings in another tool's format."""

from __future__ import annotations

import argparse
import sys

from bench.cases import choices
from bench.cli import folders
from bench.cli.options import add_run_dir, path
from bench.faults import UsageError

NAME = "export"


def add(sub: argparse._SubParsersAction) -> None:
    e = sub.add_parser(NAME, help="a run's timings in another tool's format")
    add_run_dir(e)
    e.add_argument(
        "--format",
        choices=choices.EXPORT_FORMATS,
        default=choices.EXPORT_FORMATS[0],
        help="github-action-benchmark (the default, and the only one so far): JSON for its "
        "customSmallerIsBetter tool",
    )
    e.add_argument("--output", type=path, help="write to this file (default: print)")


def command(args: argparse.Namespace) -> int:
    from bench.publish import export  # pandas: none at parse time

    run_dir = folders.run_folder(args.run_dir)
    try:
        text = export.export(run_dir, args.format)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    if args.output is None:
        print(text, end="")
    else:
        folders.write(args.output, text)
        print(f"ampbench: wrote {args.output}", file=sys.stderr)
    return 0
