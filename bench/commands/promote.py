"""`ampbench promote`: run folders published into results/ (`bench.publish.promote`)."""

from __future__ import annotations

import argparse

from bench.publish import promote


def run(args: argparse.Namespace) -> int:
    published = promote.promote(
        args.run_dirs, results_dir=args.results_dir, move=args.move, allow_cpu=args.allow_cpu
    )
    for folder in published:
        print(folder)
    return 0
