"""`ampbench publish`: the results folders as a static site that works offline."""

from __future__ import annotations

import argparse

from bench.cli.options import add_results_dir, path

NAME = "publish"


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        NAME,
        help="render the results folders as a static site (front page, a page per run, history "
        "charts per GPU model) that opens from the file system or any static host",
    )
    p.add_argument(
        "--output",
        type=path,
        metavar="DIR",
        help="the site's folder (default: the project's site/, git-ignored); a site an earlier "
        "publish made there is replaced, any other non-empty folder is refused",
    )
    add_results_dir(p, "the folder of the runs", published=True)
