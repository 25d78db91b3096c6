"""`ampbench history`: each case's step time across the revisions of one GPU model."""

from __future__ import annotations

import argparse

from bench.cli import folders
from bench.cli.argv import results_dir
from bench.cli.options import PUBLISHED, add_results_dir

NAME = "history"


def add(sub: argparse._SubParsersAction) -> None:
    h = sub.add_parser(
        NAME,
        help="each case's median step time across the revisions (the runs of one commit) of one "
        "GPU model, with rounds verdicts against the revision before; writes "
        "results/history/<gpu>.md and .png",
    )
    h.add_argument("--gpu", help="GPU model as env.json names it (default: every GPU model)")
    add_results_dir(h, "the folder of the runs", PUBLISHED)


def command(args: argparse.Namespace) -> int:
    from bench.publish import history  # matplotlib, pandas: none at parse time

    folder = folders.directory(results_dir(args))
    try:
        written = history.write(folder, args.gpu)
    except OSError as exc:  # a read-only file under history/
        raise folders.os_error(exc) from exc
    for out in written:
        print(out)
    return 0
