"""`ampbench compare A B`: two sides case by case (A the baseline, B the new one), each a run
folder, a folder of run folders (a revision of `ampbench ab`), a pytest-benchmark save or a
folder of saves."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from bench.cli.gates import add_memory_gate
from bench.cli.options import add_statistic, add_verdict_settings, path

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
