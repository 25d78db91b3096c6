"""`ampbench compare`: two sides case by case (`bench.publish.compare`), printed and written."""

from __future__ import annotations

import argparse
import sys

from bench.commands import folders
from bench.commands.gates import gates, memory_tolerance
from bench.faults import UsageError
from bench.publish import compare
from bench.store import results
from bench.verdicts import defaults


def run(args: argparse.Namespace) -> int:
    try:  # read here, not as the options are parsed: the comparison imports scipy
        pair = None if args.pair is None else compare.Pair.parse(args.pair)
    except ValueError as exc:
        raise UsageError(f"argument --pair: {exc}") from exc
    run_a, run_b = args.run_a, args.run_b
    for side in (run_a, run_b):
        if results.stored(side / results.ROWS) or (side / results.ENV).exists():
            folders.run_folder(side)  # a damaged run folder is named in one line
    if pair is None and compare.same_folder(run_a, run_b):
        print(f"A and B are the same folder ({run_a}): nothing to compare")
        return 0
    tolerance = memory_tolerance(args)  # a bad criteria file: one line, before any reading
    settings = {
        "pair": pair,
        "min_effect": defaults.MIN_EFFECT if args.min_effect is None else args.min_effect,
        "confidence": defaults.CONFIDENCE if args.confidence is None else args.confidence,
    }
    table = compare.compare(
        run_a, run_b, statistic=args.statistic, memory_tolerance=tolerance, **settings
    )
    if table.empty:  # nothing in common: a mistake in the folders or the --pair
        raise UsageError(f"no case of {run_a} matches a case of {run_b}")
    warnings = compare.env_differences(table.attrs["env_a"], table.attrs["env_b"])
    for line in warnings:
        print(f"ampbench: warning: environments differ: {line}", file=sys.stderr)
    text = compare.render(table, run_a=run_a, run_b=run_b, warnings=warnings, **settings)
    print(text)
    if not args.no_write:
        out = compare.output_path(run_a, run_b, pair)
        folders.write(out, text)
        print(f"ampbench: wrote {out}", file=sys.stderr)
    return gates(args, table, table.attrs["env_b"])
