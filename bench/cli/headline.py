"""`ampbench headline RUN`: the README's headline table of a timing run."""

from __future__ import annotations

import argparse

from bench.cli.options import add_run_dir

NAME = "headline"


def add(sub: argparse._SubParsersAction) -> None:
    add_run_dir(sub.add_parser(NAME, help="print the README headline table of a run"))
