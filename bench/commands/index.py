"""`ampbench index`: results/README.md written, or checked (`--check`), from the run folders."""

from __future__ import annotations

import argparse
import sys

from bench.commands import folders
from bench.publish import index, index_check, retired
from bench.store import tree as runs


def run(args: argparse.Namespace) -> int:
    folder = folders.directory(args.results_dir)
    if args.check:
        stale = index_check.check(folder)
        weighs, _ = index_check.weight(folder, runs.tracked_files(folder))
        fresh = f"the index is what the run folders git tracks say, and {weighs}"
        print(f"ampbench: {stale or fresh}", file=sys.stderr)
        return 1 if stale else 0
    try:
        retired.refresh(folders.writable(folder))  # the index's earlier folders, from git
        print(index.write(folder))
    except OSError as exc:  # a read-only README.md in a writable folder
        raise folders.os_error(exc) from exc
    return 0
