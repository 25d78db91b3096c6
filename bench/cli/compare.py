"""`ampbench compare A B`: its options; a side is a run folder, a folder of runs or pytest-benchmark
saves."""

from __future__ import annotations

import argparse

from bench.cli.options import add_judging, path

NAME = "compare"


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
        metavar="AXIS=A:B",
        help="compare across one axis, e.g. optimizer=foreach:fused (A and B may be the same run)",
    )
    add_judging(c)
    c.add_argument("--no-write", action="store_true", help="print only; write no file")
