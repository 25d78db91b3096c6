"""`ampbench ab REV_A REV_B [run options]`: its options; every other one is a run option."""

from __future__ import annotations

import argparse

from bench.cli import options as o
from bench.verdicts.defaults import PRIOR_ROUNDS

NAME = "ab"
PASSES_ON = "run"
"""Every option that is not ab's own is a run option, given to each round's `run`
(`bench.cli.main` leaves them to this command in `args.passed_on`)."""


def add(sub: argparse._SubParsersAction) -> None:
    # No abbreviations: a prefix of one of ab's options would take a run option meant for `run`.
    a = sub.add_parser(
        NAME,
        allow_abbrev=False,
        help="time two revisions on one grid in alternating fresh processes and compare them",
        description="Check REV_A (the baseline) and REV_B out into temporary git worktrees and "
        "time each in --rounds fresh processes of its own `python -m bench run`, alternated "
        "A B B A ...; any option that is not ab's own is a run option, given to every round.",
    )
    a.add_argument("rev_a", metavar="REV_A", help="the baseline: a commit, branch or tag")
    a.add_argument("rev_b", metavar="REV_B", help="the candidate")
    a.add_argument(
        "--rounds",
        type=o.POSITIVE,
        default=None,
        help="the most fresh processes per revision, alternated A B B A A B ... (default 7; "
        "each process times the grid once)",
    )
    a.add_argument(
        "--min-rounds",
        type=o.POSITIVE,
        default=None,
        help="stop once every case is decided after at least this many rounds a side (default "
        f"{PRIOR_ROUNDS}; --rounds itself: never stop early)",
    )
    o.add_judging(a, statistic=None)
    where = ("parent of the comparison folder", "the project's runs/, git-ignored")
    o.add_new_folder(a, *where, debug=False)
