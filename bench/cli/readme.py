"""`ampbench readme`: fill README.md's generated tables from their runs."""

from __future__ import annotations

import argparse

from bench.cli.options import path

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
