"""`ampbench check RUN --criteria FILE`: a run against a user's criteria file."""

from __future__ import annotations

import argparse

from bench.cli.options import add_run_dir, path

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
