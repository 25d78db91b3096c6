"""`ampbench pages`: every published page made again from the folders: the history, README.md's
and docs/*.md's generated blocks, the index and the site."""

from __future__ import annotations

import argparse

from bench.cli.options import add_results_dir, path

NAME = "pages"


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        NAME,
        help="make every published page again from the folders: results/history/, README.md's "
        "and docs/*.md's generated blocks, results/README.md (the index) and the site",
    )
    p.add_argument(
        "--record",
        type=path,
        metavar="RUN",
        help="first move every block that names the run of record (README.md's headline "
        "folder) onto RUN, a timing run of results/ with its report",
    )
    p.add_argument("--file", type=path, help="the README (default README.md of the project)")
    p.add_argument(
        "--output",
        type=path,
        metavar="DIR",
        help="the site's folder (default: the project's site/, git-ignored), as for `publish`",
    )
    p.add_argument(
        "--no-site", action="store_true", help="every page but the site (no `site` extra needed)"
    )
    add_results_dir(p, "the folder of the runs", published=True)
