"""`ampbench numerics`: the numerics study's options, both devices' defaults shown."""

from __future__ import annotations

import argparse

from bench.cases import checks
from bench.cli import fields
from bench.cli import options as o
from bench.numerics.measure import defaults
from bench.numerics.measure.config import NumericsConfig

NAME = "numerics"


def shown(key: str) -> str:
    """A setting's default as help shows it: both devices' where they differ (knowing which
    device this machine has would mean importing torch)."""
    if key in defaults.COMMON:
        return checks.shown(defaults.COMMON[key])
    gpu, cpu = (checks.shown(defaults.PER_DEVICE[d][key]) for d in ("cuda", "cpu"))
    return f"{gpu} on a GPU, {cpu} on the CPU"


def add(sub: argparse._SubParsersAction) -> None:
    n = sub.add_parser(
        NAME,
        help="dtype audit, underflow census, histogram, convergence, the Answer",
        description="A study on a GPU, or a smoke study of tiny sizes on the CPU: where their "
        "defaults differ, both are shown.",
    )
    o.add_preset(n, shown("preset"))
    o.add_device(n)
    settings = {k: shown(k) for k in (*defaults.COMMON, *defaults.PER_DEVICE["cpu"])}
    settings.update(modes="every mode that can run on the device", workers="all", model="mlp")
    fields.add(n, NumericsConfig, defaults=settings)
    o.add_new_folder(n)
    o.add_resume(
        n,
        "finish an interrupted study in its folder, with its settings (only --workers, --force "
        "and --debug may be given with it)",
    )
    n.add_argument(
        "--add-modes",
        type=o.MODE_NAMES,
        help="with --resume: add these convergence modes to the study (finished or not) and run "
        "only their jobs and their dtype audit, keeping every job it has; another commit is "
        "allowed, and recorded; --trace-every may go with it (the added jobs' trace period)",
    )
