"""`ampbench maxbatch`: the largest batch each mode trains, doubling and then bisecting."""

from __future__ import annotations

import argparse
import dataclasses

from bench.cases.maxbatch import CPU_DEFAULTS, MaxBatchConfig
from bench.cli import fields
from bench.cli import options as o

NAME = "maxbatch"


def add(sub: argparse._SubParsersAction) -> None:
    m = sub.add_parser(NAME, help="the largest batch each mode trains: doubling, then bisection")
    o.add_preset(m)
    o.add_device(m)
    gpu = {f.name: fields.shown_default(f) for f in dataclasses.fields(MaxBatchConfig)}
    on_cpu = {k: f"{gpu[k]} on a GPU, {v} on the CPU" for k, v in CPU_DEFAULTS.items()}
    fields.add(m, MaxBatchConfig, defaults=on_cpu)
    o.add_new_folder(m)
