"""The quality study's stopping rule (a run past its best stops, its best unchanged) and how many
runs it packs side by side, on the CPU."""

import dataclasses

import pandas as pd
import pytest

from bench.lifecycle import packing
from bench.quality import job as study
from bench.quality.config import QualityConfig
from bench.quality.job import one_run
from bench.quality.train import past_best, train

STEEP = {"steps": 12, "eval_every": 1, "batch_size": 2, "heldout_limit": 4, "timing_steps": 2,
         "warmup": 1, "modes": ("fp32", "fp16-amp"), "lr": 0.5, "min_lr": 0.5}  # fmt: skip
"""A learning rate so high that the held-out loss is worst after its first step."""


@pytest.mark.parametrize(
    ("losses", "patience", "stop"),
    [
        ([3.0, 2.0, 2.5, 2.4], 2, True),  # two evaluations above 2.0
        ([3.0, 2.0, 2.5, 1.9], 2, False),  # a new best in the last two
        ([3.0, 2.0, 2.0], 1, True),  # equal is not a new best
        ([3.0, 2.0], 2, False),  # too few evaluations to say
        ([3.0, 4.0, 5.0], 0, False),  # 0: the whole budget
    ],
)
def test_a_run_is_past_its_best_after_patience_evaluations_without_a_new_best(
    losses, patience, stop
):
    assert past_best(losses, patience) is stop


def test_a_stopped_run_is_the_whole_runs_prefix_with_the_same_best():
    cfg = QualityConfig.build("cpu", STEEP)
    full = train(cfg, one_run(cfg, "fp16-amp"), 0)
    short = train(dataclasses.replace(cfg, patience=2), one_run(cfg, "fp16-amp"), 0)
    whole = [c["heldout_loss"] for c in full["curves"]]
    kept = [c["heldout_loss"] for c in short["curves"]]
    assert len(kept) < len(whole) and kept == whole[: len(kept)]
    assert min(kept) == min(whole)  # this run's best is its first evaluation
    (run,) = short["runs"]
    assert run["stopped"] == "past its best" and run["steps"] == len(kept) - 1
    assert full["runs"][0]["stopped"] == "budget" and full["runs"][0]["steps"] == cfg.steps
    # Past its best only at the last evaluation: it trained every step, so the budget ended it.
    last = train(dataclasses.replace(cfg, steps=2, patience=2), one_run(cfg, "fp16-amp"), 0)
    assert last["runs"][0]["stopped"] == "budget" and last["runs"][0]["steps"] == 2
    # The checks left after the stop are taken once, where it stopped.
    assert max(c["step"] for c in short["checks"]) == run["steps"]


def test_runs_pack_by_cores_and_the_largest_modes_memory(monkeypatch):
    cfg = QualityConfig.build("cpu", {})
    timing = pd.DataFrame(
        {"mode": ["fp32", "bf16-amp", "fp8-tensorwise"], "status": ["ok", "ok", "unsupported"],
         "peak_gib": [3.0, 2.0, None]}
    )  # fmt: skip
    assert study.pack(dataclasses.replace(cfg, workers=3), timing, 21)[0] == 3
    assert study.pack(dataclasses.replace(cfg, workers=3), timing, 2)[0] == 2
    assert study.pack(dataclasses.replace(cfg, workers=0), timing, 21)[0] == 1  # the CPU: one
    gpu = dataclasses.replace(cfg, device="cuda", workers=0)
    monkeypatch.setattr(packing.os, "sched_getaffinity", lambda _: set(range(16)))
    monkeypatch.setattr(packing, "free_gib", lambda: 40.0)
    # 80% of 40 GiB free at 3 + 1 GiB a run: 8 fit, fewer than the 16 cores.
    workers, why = study.pack(gpu, timing, 21)
    assert workers == 8 and "16 CPU cores" in why and "8 fit" in why
    assert study.pack(gpu, timing, 5)[0] == 5
    # A study timed before peaks were kept has nothing to size from: one at a time.
    assert study.pack(gpu, timing.drop(columns="peak_gib"), 21)[0] == 1
    assert study.pack(gpu, timing.assign(peak_gib=[3.0, None, None]), 21)[0] == 1
