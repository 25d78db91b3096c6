"""`ampbench report`: a folder's report re-rendered (`bench.publish.render`)."""

from __future__ import annotations

import argparse

from bench.commands import folders
from bench.publish import render


def run(args: argparse.Namespace) -> int:
    if render.kind(args.run_dir) == "timing":
        folders.run_folder(args.run_dir)
    try:
        print(render.render(folders.writable(args.run_dir)))
    except OSError as exc:  # a read-only file in a writable folder
        raise folders.os_error(exc) from exc
    return 0
