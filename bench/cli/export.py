"""`ampbench export RUN`: a run's timings in another tool's format."""

from __future__ import annotations

import argparse

from bench.cli.options import add_run_dir, path
from bench.publish import formats

NAME = "export"


def add(sub: argparse._SubParsersAction) -> None:
    e = sub.add_parser(NAME, help="a run's timings in another tool's format")
    add_run_dir(e)
    e.add_argument(
        "--format",
        choices=tuple(formats.FORMATS),
        default=formats.DEFAULT,
        help="; ".join(f"{name}: {what}" for name, what in formats.FORMATS.items())
        + f" (default {formats.DEFAULT})",
    )
    e.add_argument("--output", type=path, help="write to this file (default: print)")
