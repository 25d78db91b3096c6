"""The options `compare` and `ab` share to gate a comparison on memory (and on a criteria file):
`--memory-tolerance`, `--fail-on-more-memory`, `--criteria` (`bench.commands.gates` applies
them)."""

from __future__ import annotations

import argparse

from bench.cli.options import path
from bench.verdicts import memory


def _tolerance(text: str) -> str:
    try:
        return memory.Tolerance.parse(text).spec()
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def add_memory_gate(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--memory-tolerance",
        type=_tolerance,
        default=None,
        metavar="TOL",
        help="how far B's peak allocated memory may move from A's and be `same memory`: N%%, "
        + f"NMiB or both (default {memory.DEFAULT.spec()}: {memory.DEFAULT.text()})".replace(
            "%", "%%"
        ),
    )
    p.add_argument(
        "--fail-on-more-memory",
        action="store_true",
        help="exit 1 when any case uses more memory (for CI)",
    )
    p.add_argument(
        "--criteria",
        type=path,
        default=None,
        metavar="FILE",
        help="exit 1 when a comparison criterion of this file fails (docs/criteria.md), e.g. "
        "no case uses more memory; its [memory] tolerance applies unless --memory-tolerance",
    )
