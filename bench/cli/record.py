"""`ampbench record`: everything ampbench publishes for one commit, part by part into one
resumable record folder (docs/options.md); `--status` reads where a detached one is."""

from __future__ import annotations

import argparse

from bench.cli import options as o

NAME = "record"


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        NAME,
        help="everything published for this commit, resumable: run, ab, quality, sweep, tests",
        description="Makes, in order of value, the default run, `ab` against the previous "
        "record's commit, the nanoGPT quality study with looks and its replication, `sweep` on "
        "examples/own_loop/hf_trainer.py, the README's tests and the GPU lane, each part a "
        "command with its log, into one record folder (tiny versions on the CPU). A second call "
        "goes on where one stopped, at the same commit only (docs/options.md).",
    )
    p.add_argument(
        "--budget",
        type=o.DURATION,
        default=0,
        help="time this call may run (900s, 25m, 1h): a part that cannot start in what is left "
        "is `not run`, one still running at the end is stopped; the next call goes on",
    )
    p.add_argument(
        "--status",
        action="store_true",
        help="print where the newest record under --results-dir is (its part, how far, the "
        "time left) and exit; runs nothing",
    )
    p.add_argument(
        "--new",
        action="store_true",
        help="start a new record although the newest one is unfinished",
    )
    p.add_argument(
        "--compare-with",
        metavar="REV",
        help="the commit `ab` compares this one with (default: the newest record's of another "
        "commit, under --results-dir or in results/); `none`: no `ab`",
    )
    o.add_device(p)
    o.add_results_dir(p, "parent of the record folder")
