"""`ampbench publish`: the results folders as a static site that works offline."""

from __future__ import annotations

import argparse
import sys

from bench.cli import folders
from bench.cli.argv import results_dir
from bench.cli.options import PUBLISHED, add_results_dir, path
from bench.publish.site import publish
from bench.store import paths

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
    add_results_dir(p, "the folder of the runs", PUBLISHED)


def command(args: argparse.Namespace) -> int:
    folder = folders.directory(results_dir(args))
    try:
        built = publish(folder, args.output or paths.SITE)
    except OSError as exc:  # a file that could not be read or written while building
        raise folders.os_error(exc) from exc
    size = built.size_bytes / 2**20
    print(
        f"ampbench: wrote {built.pages} pages ({size:.1f} MiB) in {built.folder}; "
        "open index.html in a browser",
        file=sys.stderr,
    )
    print(built.front)
    return 0
