"""`ampbench check RUN --criteria FILE`: a run against a user's criteria file."""

from __future__ import annotations

import argparse

from bench.cli import folders
from bench.cli.options import add_run_dir, path
from bench.faults import UsageError

NAME = "check"


def add(sub: argparse._SubParsersAction) -> None:
    k = sub.add_parser(
        NAME,
        help="check a run against a criteria file (docs/criteria.md): one PASS/FAIL line per "
        "criterion; exit 1 when any fails",
    )
    add_run_dir(k)
    k.add_argument(
        "--criteria",
        type=path,
        required=True,
        metavar="FILE",
        help="TOML file of [[criterion]] tables",
    )


def command(args: argparse.Namespace) -> int:
    from bench.publish import criteria  # pandas: none at parse time

    run_dir = folders.run_folder(args.run_dir)
    try:
        checked = criteria.check_folder(run_dir, args.criteria)
    except criteria.CriteriaError as exc:  # the file or one of its expressions
        raise UsageError(str(exc)) from exc
    print(checked.render())
    return 1 if checked.failed else 0
