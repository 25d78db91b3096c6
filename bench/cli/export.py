"""`ampbench export RUN`: a run's timings in another tool's format."""

from __future__ import annotations

import argparse
import sys

from bench.cli import folders
from bench.cli.options import add_run_dir, path
from bench.faults import UsageError
from bench.publish import formats

NAME = "export"


def add(sub: argparse._SubParsersAction) -> None:
    e = sub.add_parser(NAME, help="a run's timings in another tool's format")
    add_run_dir(e)
    e.add_argument(
        "--format",
        choices=tuple(formats.FORMATS),
        default=formats.DEFAULT,
        help="; ".join(f"{f.name}: {f.what}" for f in formats.FORMATS.values())
        + f" (default {formats.DEFAULT})",
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
