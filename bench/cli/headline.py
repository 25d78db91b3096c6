"""`ampbench headline RUN`: the README's headline table of a timing run."""

from __future__ import annotations

import argparse

from bench.cli import folders
from bench.cli.options import add_run_dir
from bench.faults import UsageError

NAME = "headline"


def add(sub: argparse._SubParsersAction) -> None:
    add_run_dir(sub.add_parser(NAME, help="print the README headline table of a run"))


def command(args: argparse.Namespace) -> int:
    from bench.publish import report  # matplotlib, pandas: none at parse time
    from bench.store import results  # pandas: none at parse time

    df = results.load(folders.run_folder(args.run_dir))
    table = report.headline(df)
    if table == report.NO_HEADLINE:
        optimizer = report.headline_optimizer(df)
        raise UsageError(f"{args.run_dir}: no eager {optimizer}-Adam case passed; no headline")
    print(table)
    return 0
