"""`ampbench quality`: the time-to-quality study (each recipe trained on real data over several
seeds to a held-out target, judged against fp32 by an equivalence test), or the finish of an
interrupted one (`--resume`, which may add recipes with `--add-modes` and seeds with
`--add-seeds`). The options beyond the study's settings are `bench.cli.quality_options`'."""

from __future__ import annotations

import argparse
import dataclasses

from bench.cases import checks
from bench.cli import fields
from bench.cli import options as o
from bench.cli import quality_options as q_o
from bench.quality.config import PER_DEVICE, QualityConfig

NAME = "quality"


def add(sub: argparse._SubParsersAction) -> None:
    q = sub.add_parser(
        NAME,
        help="time to quality on real data: recipes against fp32 over seeds",
        description="Trains each recipe from the same weights per seed on real data "
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
    o.add_results_dir(q)
    o.add_tag(q)
    o.add_debug(q)
    o.add_resume(q, "train what an interrupted study left, with its settings")
    q_o.add(q)
