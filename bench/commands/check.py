"""`ampbench check`: a run against a user's criteria file (`bench.verdicts.criteria`)."""

from __future__ import annotations

import argparse

from bench.commands import folders
from bench.faults import UsageError
from bench.verdicts import criteria


def run(args: argparse.Namespace) -> int:
    run_dir = folders.run_folder(args.run_dir)
    try:
        checked = criteria.check_folder(run_dir, args.criteria)
    except criteria.CriteriaError as exc:  # the file or one of its expressions
        raise UsageError(str(exc)) from exc
    print(checked.render())
    return 1 if checked.failed else 0
