"""`ampbench compare A B`: two sides case by case (A the baseline, B the new one), each a run
folder, a folder of run folders (a revision of `ampbench ab`), a pytest-benchmark save or a
folder of saves."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from bench.cli import folders
from bench.cli.gates import add_memory_gate, gates, memory_tolerance
from bench.cli.options import add_statistic, add_verdict_settings, path
from bench.faults import UsageError

if TYPE_CHECKING:
    from bench.publish.compare import Pair

NAME = "compare"


def _pair(text: str) -> Pair:
    from bench.publish import compare  # scipy: only when --pair is given

    try:
        return compare.Pair.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def add(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser(
        NAME,
        help="compare two run folders, folders of runs or pytest-benchmark saves case by case "
        "(A baseline, B new)",
    )
    c.add_argument("run_a", type=path, metavar="A")
    c.add_argument("run_b", type=path, metavar="B")
    c.add_argument(
        "--pair",
        type=_pair,
        metavar="AXIS=A:B",
        help="compare across one axis, e.g. optimizer=foreach:fused (A and B may be the same run)",
    )
    add_verdict_settings(c)
    add_statistic(c)
    c.add_argument(
        "--fail-on-slower", action="store_true", help="exit 1 when any case is slower (for CI)"
    )
    add_memory_gate(c)
    c.add_argument("--no-write", action="store_true", help="print only; write no file")


def command(args: argparse.Namespace) -> int:
    from bench.publish import compare  # pandas: none at parse time
    from bench.store import results  # pandas: none at parse time
    from bench.verdicts import defaults as stats  # beside compare's, read at run time

    run_a, run_b = args.run_a, args.run_b
    for side in (run_a, run_b):
        if results.stored(side / results.ROWS) or (side / results.ENV).exists():
            folders.run_folder(side)  # a damaged run folder is named in one line
    if args.pair is None and compare.same_folder(run_a, run_b):
        print(f"A and B are the same folder ({run_a}): nothing to compare")
        return 0
    tolerance = memory_tolerance(args)  # a bad criteria file: one line, before any reading
    settings = {
        "pair": args.pair,
        "min_effect": stats.MIN_EFFECT if args.min_effect is None else args.min_effect,
        "confidence": stats.CONFIDENCE if args.confidence is None else args.confidence,
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
        out = compare.output_path(run_a, run_b, args.pair)
        folders.write(out, text)
        print(f"ampbench: wrote {out}", file=sys.stderr)
    return gates(args, table, table.attrs["env_b"])
