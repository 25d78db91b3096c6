"""`ampbench export`: a run's timings in another tool's format (`bench.publish.export`)."""

from __future__ import annotations

import argparse
import sys

from bench.commands import folders
from bench.faults import UsageError
from bench.publish import export


def run(args: argparse.Namespace) -> int:
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
