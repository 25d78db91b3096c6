"""`ampbench readme`: fill README.md's generated tables from their runs."""

from __future__ import annotations

import argparse
import sys

from bench.cli.options import path
from bench.faults import UsageError
from bench.store import paths

NAME = "readme"


def add(sub: argparse._SubParsersAction) -> None:
    r = sub.add_parser(
        NAME, help="fill README.md's generated tables (<!-- ampbench:KIND RUN -->) from runs"
    )
    r.add_argument(
        "--check",
        action="store_true",
        help="change nothing; exit 1 when a table disagrees with its run",
    )
    r.add_argument("--file", type=path, help="the file (default README.md of the project)")


def command(args: argparse.Namespace) -> int:
    from bench.publish import readme  # matplotlib, pandas, scipy: none at parse time

    file = args.file or paths.ROOT / "README.md"
    if not file.is_file():
        raise UsageError(f"--file {file}: no such file")
    changed = readme.update(file, check=args.check)
    verb = "disagrees with its run" if args.check else "regenerated"
    for block in changed:
        print(f"ampbench: {block.label}: {verb}", file=sys.stderr)
    if not changed:
        print(
            f"ampbench: {file.name} and docs/: every generated table matches its run",
            file=sys.stderr,
        )
    return 1 if args.check and changed else 0
