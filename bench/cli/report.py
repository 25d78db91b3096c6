"""`ampbench report RUN`: re-render a folder's report (and a numerics folder's figures)."""

from __future__ import annotations

import argparse

from bench.cli.options import add_run_dir

NAME = "report"


def add(sub: argparse._SubParsersAction) -> None:
    text = "re-render a folder's report.md (and a numerics folder's figures)"
    add_run_dir(sub.add_parser(NAME, help=text))
