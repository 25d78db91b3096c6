"""`ampbench index`: regenerate results/README.md, the index of run folders, from the folders."""

from __future__ import annotations

import argparse

from bench.cli.options import add_results_dir

NAME = "index"


def add(sub: argparse._SubParsersAction) -> None:
    i = sub.add_parser(
        NAME, help="regenerate results/README.md, the index of run folders, from the folders"
    )
    add_results_dir(i, "the folder to index", published=True)
    i.add_argument(
        "--check",
        action="store_true",
        help="change nothing; exit 1 when the index is not what the run folders git tracks "
        "say, a folder it lists lacks its report.md or a figure the report shows, or the files "
        "git tracks there weigh more than 30 MB in all or 5 MB each",
    )
