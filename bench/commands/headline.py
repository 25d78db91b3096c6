"""`ampbench headline`: a timing run's headline table, printed (`bench.publish.report`)."""

from __future__ import annotations

import argparse

from bench.commands import folders
from bench.faults import UsageError
from bench.publish import report
from bench.store import results


def run(args: argparse.Namespace) -> int:
    df = results.load(folders.run_folder(args.run_dir))
    table = report.headline(df)
    if table == report.NO_HEADLINE:
        optimizer = report.headline_optimizer(df)
        raise UsageError(f"{args.run_dir}: no eager {optimizer}-Adam case passed; no headline")
    print(table)
    return 0
