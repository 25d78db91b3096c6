"""The options of `ampbench quality` that are not the study's settings (`QualityConfig`'s
fields): how much device time this command may train for, `--rerun-check`, `--replicate`, and what
a resume adds or trains (`--only`, `--add-modes`, `--add-seeds`); which of them go with
`--resume`, and the one budget they give."""

from __future__ import annotations

import argparse

from bench.cases import checks
from bench.cli import options as o
from bench.recipes import catalog


def add(q: argparse.ArgumentParser) -> None:
    q.add_argument(
        "--budget-s",
        type=o.converter(checks.POSITIVE_FINITE),
        default=0,
        help="train only the runs whose cost (steps × each recipe's step time, measured first) "
        "fits this many seconds, fp32's first; `--resume` trains the rest",
    )
    q.add_argument(
        "--budget",
        type=o.converter(checks.DURATION),
        default=0,
        help="device time this command may train for (900s, 15m, 1h): a sequential study "
        "(--max-seeds, else 8) starts no look past it; --resume goes on",
    )
    q.add_argument(
        "--rerun-check",
        action="store_true",
        help="with --resume at another commit, on a GPU: retrain one of fp32's seeds and add "
        "seeds only if its best held-out loss comes back within the margin",
    )
    q.add_argument(
        "--replicate",
        action="store_true",
        help="run the study twice on disjoint seeds (the second's start at "
        "1000) and say whether any verdict contradicts the other",
    )
    q.add_argument(
        "--only",
        type=o.converter(checks.choice(catalog.CARDS), "mode", items=True),
        help="with --resume: train only these recipes' runs this time (a study split over "
        "several sessions)",
    )
    q.add_argument(
        "--add-modes",
        type=o.converter(checks.choice(catalog.CARDS), "mode", items=True),
        help="with --resume: add these recipes to the study and train them",
    )
    q.add_argument(
        "--add-seeds",
        type=o.converter(checks.NON_NEGATIVE_INT, "seed", items=True),
        help="with --resume: add these seeds to the study and train every recipe on them (where "
        "the study names how many seeds its margin rule needs)",
    )
