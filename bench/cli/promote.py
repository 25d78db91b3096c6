"""`ampbench promote RUN...`: publish run folders from runs/ into results/."""

from __future__ import annotations

import argparse

from bench.cli.options import add_results_dir, path

NAME = "promote"


def add(sub: argparse._SubParsersAction) -> None:
    pr = sub.add_parser(
        NAME,
        help="publish run folders: copy them from runs/ into results/ and regenerate its index",
    )
    pr.add_argument("run_dirs", type=path, nargs="+", metavar="RUN")
    add_results_dir(pr, "the folder to publish into", published=True)
    pr.add_argument("--move", action="store_true", help="move the folders instead of copying")
    pr.add_argument(
        "--allow-cpu",
        action="store_true",
        help="copy a CPU smoke run too (refused otherwise; the index leaves it out either way)",
    )
