"""`ampbench history`: each case's step time across the revisions of one GPU model."""

from __future__ import annotations

import argparse

from bench.cli.options import add_results_dir

NAME = "history"


def add(sub: argparse._SubParsersAction) -> None:
    h = sub.add_parser(
        NAME,
        help="each case's median step time across the revisions (the runs of one commit) of one "
        "GPU model, with rounds verdicts against the revision before; writes "
        "results/history/<gpu>.md and .png",
    )
    h.add_argument("--gpu", help="GPU model as env.json names it (default: every GPU model)")
    add_results_dir(h, "the folder of the runs", published=True)
