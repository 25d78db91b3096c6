"""What the index (`bench.publish.index`) says of a run that depends on its kind: its GPUs, model
and preset, its grid in one line (`line`), and how many of its cases, jobs or rounds passed. One
function per kind of run folder (`ROW`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from bench.cases.grid import describe, fit
from bench.cases.sizes import SEPARATOR, Sizes
from bench.ground import cards
from bench.quality import tables
from bench.store import results
from bench.store.run_env import RunEnv
from bench.store.tree import Run

COMPARISON = "ab"
"""The kind of an `ab` comparison's folder: a table of its own, after the runs."""
STRESS = {
    # a numerics study's stress flag: (its default, how a grid shows another value)
    "loss_mult": (1.0, "loss ×{}"),
    "reduction": ("mean", "{} reduction"),
    "init_scale": (1.0, "init ×{}"),
}


@dataclass(frozen=True)
class Axis:
    """One axis of a grid, as its values (`fp32,bf16-amp`) and as a count (`2 modes`)."""

    values: str
    count: str


def axis(values: list, noun: str, *, label: str = "") -> Axis | None:
    """An axis of `values`; None when there are none (a folder older than the axis)."""
    if not values:
        return None
    shown = f"{label}{','.join(map(str, values))}"
    return Axis(shown, f"{len(values)} {noun}s" if len(values) > 1 else shown)


def batches(values: list) -> Axis | None:
    """Batch sizes, or their range where there are more than two."""
    if not values:
        return None
    shown = f"batch {','.join(map(str, values))}"
    return Axis(shown, f"batch {min(values)}–{max(values)}" if len(values) > 2 else shown)


def line(axes: list[Axis | None], *, extras: tuple[str, ...] = ()) -> str:
    """`a × b × c, extra, extra` in at most GRID_WIDTH characters (`bench.cases.grid.fit`)."""
    return fit([(a.values, a.count) for a in axes if a is not None], extras)


def lr(x: float) -> str:
    """A learning rate as people write it: 3e-4, 1e-3."""
    mantissa, exponent = f"{x:e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"


def _preset(cfg: dict) -> str:
    """The preset whose sizes a run used, else the sizes themselves; with the model's name
    unless the workload's sizes are its cases' own (the MLP's)."""
    model = cfg.get("model", cards.DEFAULT)
    card = cards.card(model)
    if not (card and card.free_sizes):
        return f"{model} {cfg.get('preset', '')}".strip()
    if cfg.get("preset"):
        return str(cfg["preset"])
    from bench.workloads.registry import get  # here: the workloads import torch

    workload = get(model)
    sizes = Sizes.of(cfg["sizes"])  # older code's config too (`bench.store.schema`)
    for name, size in workload.presets.items():
        if sizes == workload.sizes_at(size):
            return name
    return str(sizes).replace(SEPARATOR, "×")


def _finished(env: RunEnv, cell: str) -> str:
    return cell if "ended" in env else f"{cell} (unfinished)"


def _csv_rows(path: Path) -> int:
    """Rows of a CSV file; 0 when it is missing or empty (then it may have no header either)."""
    try:
        return len(pd.read_csv(path))
    except (FileNotFoundError, pd.errors.EmptyDataError):
        return 0


@dataclass(frozen=True)
class Cells:
    """What a row says that depends on the kind of run."""

    gpus: int
    """GPUs the run used: a timing run's ranks, a study's workers."""
    model: str | None
    grid: str | None
    passed: str | None
    """`ok/total` of the run's cases, jobs or modes, `(unfinished)` after it if it did not end."""


def _timing(run: Run) -> Cells:
    cfg = run.env.get("config", {})
    rows = results.read_rows(run.path / results.ROWS)
    last = {r["case_id"]: r["status"] for r in rows}  # a resumed case's last row wins
    total = run.env.get("expected_cases") or len(last)
    ok = sum(status == "ok" for status in last.values())
    ranks = int(cfg.get("world_size", 1))
    return Cells(ranks, _preset(cfg), describe(cfg), _finished(run.env, f"{ok}/{total}"))


def _numerics(run: Run) -> Cells:
    cfg = run.env.get("numerics_config", {})
    modes, sizes, seeds = (cfg.get(k, []) for k in ("modes", "conv_batch_sizes", "seeds"))
    # The study's jobs, as `NumericsConfig.jobs` plans them: one census trajectory per census
    # batch size, one convergence run per batch size, mode and seed.
    total = len(cfg.get("census_batch_sizes", [])) + len(sizes) * len(modes) * len(seeds)
    if "ended" in run.env:
        ok = total - _csv_rows(run.path / "failed.csv")
    else:  # each finished job is kept in jobs/ until the study ends
        ok = len(list((run.path / "jobs").glob("*.json")))
    stress = tuple(
        text.format(cfg[k])
        for k, (default, text) in STRESS.items()
        if cfg.get(k, default) != default
    )
    axes = [
        axis(modes, "mode"),
        batches(sizes),
        # One seed is a study's usual (the census runs the first): only several are news.
        axis(seeds, "seed", label="seeds ") if len(seeds) > 1 else None,
        Axis(f"{cfg.get('steps')} steps", f"{cfg.get('steps')} steps"),
    ]
    extras = (f"lr {lr(cfg['lr'])}",) if "lr" in cfg else ()
    workers = int(cfg.get("workers") or 1)
    return Cells(
        workers,
        _preset(cfg),
        line(axes, extras=extras + stress),
        _finished(run.env, f"{ok}/{total}"),
    )


def _maxbatch(run: Run) -> Cells:
    cfg = run.env.get("maxbatch_config", {})
    variants = cfg.get("variants", ["eager"])
    trials = results.read_jsonl(run.path / "trials.jsonl")
    found = {(t.get("mode"), t.get("variant", "eager")) for t in trials if t["status"] == "ok"}
    total = len(cfg.get("modes", [])) * len(variants)
    axes = [axis(cfg.get("modes", []), "mode"), axis([cfg.get("optimizer")], "optimizer")]
    if variants != ["eager"]:
        axes.append(axis(variants, "variant"))
    extras = (f"batch {cfg.get('start')} up to {cfg.get('limit')}",)
    passed = _finished(run.env, f"{len(found)}/{total}")
    return Cells(1, _preset(cfg), line(axes, extras=extras), passed)


def _quality(run: Run) -> Cells:
    cfg = run.env.get("quality_config", {})
    modes, seeds = cfg.get("modes", []), cfg.get("seeds", [])
    runs = tables.load(run.path)["runs"]
    ok = int((runs["status"] == "ok").sum())
    axes = [
        axis(modes, "mode"),
        Axis(f"data {cfg.get('data')}", f"data {cfg.get('data')}"),
        axis(seeds, "seed", label="seeds "),
        Axis(f"{cfg.get('steps')} steps", f"{cfg.get('steps')} steps"),
    ]
    passed = _finished(run.env, f"{ok}/{len(modes) * len(seeds)}")
    # A study's workers are processes sharing its one device (`QualityConfig.workers`), not GPUs.
    return Cells(1, _preset(cfg), line(axes), passed)


def _option(options: list[str], name: str) -> str | None:
    """The value of `name` in a command line's options (`--name VALUE` or `--name=VALUE`)."""
    for i, arg in enumerate(options):
        if arg == name and i + 1 < len(options):
            return options[i + 1]
        if arg.startswith(f"{name}="):
            return arg.split("=", 1)[1]
    return None


def _ab(run: Run) -> Cells:
    """An `ab` comparison: the two revisions over the grid its rounds ran, and how many of its
    rounds (one process of one side each) exited 0."""
    cfg = run.env.get("ab_config", {})
    options = [str(o) for o in cfg.get("run_options", [])]
    model = {k: v for k in ("model", "preset") if (v := _option(options, f"--{k}")) is not None}
    modes, sizes = (_option(options, k) for k in ("--modes", "--batch-sizes"))
    axes = [
        Axis(
            f"{cfg.get('rev_a')} vs {cfg.get('rev_b')}", f"{cfg.get('rev_a')} vs {cfg.get('rev_b')}"
        ),
        axis(modes.split(",") if modes else [], "mode"),
        batches(sizes.split(",") if sizes else []),
    ]
    rounds = run.env.get("rounds", [])
    ok = sum(r.get("exit") == 0 for r in rounds)
    shown = _preset(model) if "preset" in model else model.get("model")  # None: run's default
    return Cells(1, shown, line(axes), _finished(run.env, f"{ok}/{len(rounds)}"))


ROW: dict[str, Callable[[Run], Cells]] = {
    COMPARISON: _ab,
    "quality": _quality,
    "timing": _timing,
    "numerics": _numerics,
    "maxbatch": _maxbatch,
}
