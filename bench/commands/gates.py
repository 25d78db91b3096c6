"""The memory and criteria gates of `compare` and `ab`, applied (`bench.verdicts.gates`)."""

from __future__ import annotations

import argparse

import pandas as pd

from bench.store.run_env import RunEnv
from bench.verdicts import gates as rules
from bench.verdicts import memory


def memory_tolerance(args: argparse.Namespace) -> memory.Tolerance:
    return rules.memory_tolerance(args.memory_tolerance, args.criteria)


def gates(args: argparse.Namespace, table: pd.DataFrame, env: RunEnv) -> int:
    status, text = rules.exit_status(
        table,
        env,
        fail_on_slower=args.fail_on_slower,
        fail_on_more_memory=args.fail_on_more_memory,
        criteria=args.criteria,
    )
    if text:
        print(text)
    return status
