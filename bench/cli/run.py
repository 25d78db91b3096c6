"""`ampbench run` (the default command): time every case of a grid into a new results folder,
or finish an interrupted one (`--resume`)."""

from __future__ import annotations

import argparse

from bench.cases import grid
from bench.cli import fields
from bench.cli import options as o

NAME = "run"


def add(sub: argparse._SubParsersAction) -> None:
    r = sub.add_parser(NAME, help="time every case of a grid into a new results folder (default)")
    fields.add(r, grid.RunConfig, ("model",))
    o.add_preset(r)
    o.add_sizes(r)
    fields.add_axes(r)
    fields.add(r, grid.RunConfig, ("world_size",))
    r.add_argument(
        "--oversubscribe",
        action="store_true",
        help="with --gpus N on the CPU: start N gloo processes although N exceeds the CPU cores",
    )
    r.add_argument(
        "--collective-timeout",
        type=o.POSITIVE_FLOAT,
        default=300.0,
        help="seconds a collective may take before the case fails as `timeout` (default 300)",
    )
    o.add_device(r)
    how = ("full", "steps", "warmup", "repeats", "min_repeats", "rounds", "seed", "overhead",
           "numerics")  # fmt: skip
    fields.add(r, grid.RunConfig, how)
    o.add_new_folder(r, "parent folder of run folders")
    o.add_resume(
        r,
        "finish an interrupted run with its recorded grid: run only its missing cases "
        "(no other option may be given, but --force, --gpus, --oversubscribe and --debug)",
    )
