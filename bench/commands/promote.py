"""`ampbench promote`: run folders copied into results/ (`bench.jobs.promote`), then its index
regenerated (`bench.publish.index`)."""

from __future__ import annotations

import argparse
import sys

from bench.jobs import promote
from bench.publish import index
from bench.store import paths


def run(args: argparse.Namespace) -> int:
    published = promote.promote(
        args.run_dirs, results_dir=args.results_dir, move=args.move, allow_cpu=args.allow_cpu
    )
    if paths.in_results(args.results_dir):
        index.refresh(published[0])  # the project's results/README.md
    else:  # another folder of runs: its own index, as `ampbench index --results-dir` writes
        print(f"ampbench: updated {index.write(args.results_dir)}", file=sys.stderr)
    for folder in published:
        print(folder)
    return 0
