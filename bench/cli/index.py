"""`ampbench index`: regenerate results/README.md, the index of run folders, from the folders."""

from __future__ import annotations

import argparse
import sys

from bench.cli import folders
from bench.cli.argv import results_dir
from bench.cli.options import PUBLISHED, add_results_dir

NAME = "index"


def add(sub: argparse._SubParsersAction) -> None:
    i = sub.add_parser(
        NAME, help="regenerate results/README.md, the index of run folders, from the folders"
    )
    add_results_dir(i, "the folder to index", PUBLISHED)
    i.add_argument(
        "--check",
        action="store_true",
        help="change nothing; exit 1 when the index is not what the run folders git tracks "
        "say, or the files git tracks there weigh more than 30 MB in all or 5 MB each",
    )


def command(args: argparse.Namespace) -> int:
    from bench.publish import index, index_check, runs  # pandas: none at parse time

    folder = folders.directory(results_dir(args))
    if args.check:
        stale = index_check.check(folder)
        weighs, _ = index_check.weight(folder, runs.tracked_files(folder))
        fresh = f"the index is what the run folders git tracks say, and {weighs}"
        print(f"ampbench: {stale or fresh}", file=sys.stderr)
        return 1 if stale else 0
    try:
        print(index.write(folders.writable(folder)))
    except OSError as exc:  # a read-only README.md in a writable folder
        raise folders.os_error(exc) from exc
    return 0
