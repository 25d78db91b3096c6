"""`ampbench history`: the history pages of the published runs (`bench.publish.history`)."""

from __future__ import annotations

import argparse

from bench.commands import folders
from bench.publish import history


def run(args: argparse.Namespace) -> int:
    folder = folders.directory(args.results_dir)
    try:
        written = history.write(folder, args.gpu)
    except OSError as exc:  # a read-only file under history/
        raise folders.os_error(exc) from exc
    for out in written:
        print(out)
    return 0
