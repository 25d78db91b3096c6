"""`ampbench quality`: the time-to-quality study (docs/quality.md), or the finish of an
interrupted one (`--resume`, which may add modes and seeds)."""

from __future__ import annotations

import argparse
import dataclasses

from bench.cases import checks
from bench.cli import fields
from bench.cli import options as o
from bench.quality.config import PER_DEVICE, QualityConfig

NAME = "quality"


def add(sub: argparse._SubParsersAction) -> None:
    q = sub.add_parser(
        NAME,
        help="time to quality on real data: modes against fp32 over seeds",
        description="Trains each mode from the same weights per seed on real data "
        "(docs/quality.md); where a default differs per device, both are shown.",
    )
    o.add_preset(q, "shakespeare-char on a GPU, shakespeare-tiny on the CPU (gpt)")
    o.add_device(q)
    defaults = {f.name: f.default for f in dataclasses.fields(QualityConfig)}

    def both(key: str) -> str:
        gpu, cpu = (checks.shown(PER_DEVICE[d].get(key, defaults[key])) for d in ("cuda", "cpu"))
        return f"{gpu} on a GPU, {cpu} on the CPU"

    shown = {k: both(k) for k in PER_DEVICE["cpu"] if k != "preset"}
    fields.add(q, QualityConfig, defaults=shown)
    o.add_new_folder(q)
    o.add_resume(q, "train what an interrupted study left, with its settings")
    # Beyond the study's settings: how long it may train, and what a resume adds or trains.
    q.add_argument(
        "--budget-s",
        type=o.POSITIVE_FLOAT,
        default=0,
        help="train only the runs whose cost (steps × each mode's step time, measured first) "
        "fits this many seconds, fp32's first; `--resume` trains the rest",
    )
    q.add_argument(
        "--budget",
        type=o.DURATION,
        default=0,
        help="device time this command may train for (900s, 15m, 1h): a sequential study "
        "(--max-seeds, else 8) starts no look past it; --resume goes on",
    )
    q.add_argument(
        "--rerun-check",
        action="store_true",
        help="with --resume at other code, on a GPU: retrain one seed of every mode and go on "
        "only if each best held-out loss comes back within its rerun noise",
    )
    q.add_argument(
        "--replicate",
        action="store_true",
        help="run the study twice on disjoint seeds (the second's start at "
        "1000) and say whether any verdict contradicts the other",
    )
    q.add_argument(
        "--only",
        type=o.MODE_NAMES,
        help="with --resume: train only these modes' runs this time (a study split over "
        "several sessions)",
    )
    q.add_argument(
        "--add-modes",
        type=o.MODE_NAMES,
        help="with --resume: add these modes to the study and train them",
    )
    q.add_argument(
        "--add-seeds",
        type=o.SEEDS,
        help="with --resume: add these seeds to a fixed study whose runs have not yet finished "
        "(a sequential study adds its own in looks), and train every mode on them",
    )
