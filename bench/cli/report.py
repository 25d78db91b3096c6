"""`ampbench report RUN`: re-render a folder's report (and a numerics folder's figures)."""

from __future__ import annotations

import argparse

from bench.cli import folders
from bench.cli.options import add_run_dir

NAME = "report"


def add(sub: argparse._SubParsersAction) -> None:
    text = "re-render a folder's report.md (and a numerics folder's figures)"
    add_run_dir(sub.add_parser(NAME, help=text))


def command(args: argparse.Namespace) -> int:
    from bench.publish import render  # pandas: none at parse time

    if render.kind(args.run_dir) == "timing":
        folders.run_folder(args.run_dir)
    try:
        print(render.render(folders.writable(args.run_dir)))
    except OSError as exc:  # a read-only file in a writable folder
        raise folders.os_error(exc) from exc
    return 0
