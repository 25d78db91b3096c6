"""The largest batch: `python -m bench maxbatch` (or `./run_bench.sh maxbatch`).

For each mode (and variant where asked), the largest batch size that trains a few full steps
without failing: doubling from `start` until a trial fails or `limit` is reached, then bisection
between the last batch that trained and the first that did not, until the gap is at most
`resolution` of the batch. Every trial is a row of `trials.jsonl` (batch size, status, samples/s,
peak memory); the report gives each mode's largest batch, its throughput there, and what stopped
the search: memory (`oom`), another error (its message, for example an indexing limit), or the
search's own limit.

Trials run one after another in this process. Each one is isolated by a full cleanup: its state
is dropped, the garbage collector runs and the CUDA caching allocator is emptied, and the memory
still allocated afterwards is recorded (`leftover_gib`): a trial's out-of-memory error cannot leave
memory behind that the next one would miss without the row saying so.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from bench.cases.case import Case
from bench.execution.variants import VARIANTS, prepare, unsupported_reason
from bench.faults import error_summary, fault_status
from bench.measure.memory import GIB
from bench.measure.runner import free_device_memory
from bench.measure.stats import summarize
from bench.measure.timing import clock_for, time_phases
from bench.publish import index
from bench.publish.maxbatch import TRIALS, render
from bench.recipes.modes import MODES
from bench.recipes.step import build
from bench.store import folders, results
from bench.workloads.mlp import PRESETS


@dataclass(frozen=True, kw_only=True)
class MaxBatchConfig:
    device: str
    preset: str
    modes: tuple[str, ...] = tuple(MODES)
    variants: tuple[str, ...] = ("eager",)
    optimizer: str = "fused"
    start: int = 1024
    """The first batch size tried; the search doubles from here."""
    limit: int = 2**20
    """The largest batch size tried: the search stops there even if it still trains."""
    resolution: float = 1 / 16
    """Bisection stops when the gap between the last good and the first bad batch size is at
    most this share of the good one."""
    warmup: int = 1
    steps: int = 2

    def __post_init__(self) -> None:
        if not 0 < self.start <= self.limit:
            raise ValueError(f"start must be between 1 and limit ({self.limit}), got {self.start}")
        if not 0 < self.resolution < 1:
            raise ValueError(f"resolution must be between 0 and 1, got {self.resolution!r}")
        for mode in self.modes:
            for variant in self.variants:
                self.case(mode, variant, self.start)  # validates every field

    def case(self, mode: str, variant: str, batch_size: int) -> Case:
        return Case.of(
            PRESETS[self.preset],
            mode=mode,
            variant=variant,
            optimizer=self.optimizer,
            batch_size=batch_size,
            device=self.device,
            warmup=self.warmup,
            steps=self.steps,
        )

    def record(self) -> dict[str, object]:
        return dataclasses.asdict(self)


def _cleanup(case: Case) -> float:
    """Drop everything a trial left, and return the GiB still allocated (0 on the CPU)."""
    free_device_memory(compiled=VARIANTS[case.variant].compile_mode is not None)
    return torch.cuda.memory_allocated() / GIB if case.device == "cuda" else 0.0


def _train(case: Case) -> dict[str, object]:
    """Build the case and train `warmup + steps` full steps. Every tensor it makes is a local of
    this frame, so all of it is unreachable once it returns or raises."""
    s = build(case, capturable=VARIANTS[case.variant].capture)
    prepared = prepare(s)
    samples = time_phases(
        prepared.phases, warmup=case.warmup, steps=case.steps, clock=clock_for(case.device)
    )
    total_ms = summarize(samples["total"])["median"]
    out: dict[str, object] = {
        "total_ms": total_ms,
        "samples_per_s": case.batch_size / (total_ms * 1e-3),
    }
    if not all(math.isfinite(v) for v in torch.stack(prepared.losses).float().tolist()):
        out.update(status="nonfinite", error="a loss was not finite")
    return out


def trial(case: Case) -> dict[str, object]:
    """One trial of the search: a flat row with its status, throughput and peak memory, and the
    memory still allocated after the cleanup that follows it."""
    row: dict[str, object] = {"case_id": case.case_id, **case.axes(), "status": "ok", "error": ""}
    reason = unsupported_reason(case)
    if reason is not None:
        return {**row, "status": "unsupported", "error": reason}
    cuda = case.device == "cuda"
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    try:
        row.update(_train(case))
    except Exception as exc:  # the failure is the finding: a row, and the search goes on
        row.update(status=fault_status(exc), error=error_summary(exc))
    # Out of the except block: the exception and the frames it held are gone, and with them the
    # failed trial's tensors.
    if cuda:
        row["peak_alloc_gib"] = torch.cuda.max_memory_allocated() / GIB
        row["peak_reserved_gib"] = torch.cuda.max_memory_reserved() / GIB
    row["leftover_gib"] = _cleanup(case)
    return row


def search(
    run: Callable[[int], dict[str, object]], *, start: int, limit: int, resolution: float
) -> list[dict[str, object]]:
    """Trials by doubling from `start`, then bisection; `run(batch_size)` returns a row with a
    `status`. Returns every trial's row, in the order run."""
    rows: list[dict[str, object]] = []

    def ok(batch: int) -> bool:
        row = run(batch)
        rows.append(row)
        return row["status"] == "ok"

    good, bad = 0, None
    batch = start
    while True:
        if not ok(batch):
            bad = batch
            break
        good = batch
        if batch >= limit:
            return rows
        batch = min(batch * 2, limit)
    if good == 0 or rows[-1]["status"] == "unsupported":
        return rows  # even the first size failed: nothing to bisect
    while bad - good > max(1, int(good * resolution)):
        middle = (good + bad) // 2
        if ok(middle):
            good = middle
        else:
            bad = middle
    return rows


def start(cfg: MaxBatchConfig, *, results_dir: Path, command: str, tag: str | None = None) -> Path:
    """Run the search for every mode and variant into a new folder (`<stamp>_<gpu>_<sha>
    _maxbatch[_<tag>]`); returns the folder."""
    run_dir, info = folders.open_new(
        results_dir,
        device=cfg.device,
        kind="maxbatch_config",
        settings=cfg.record(),
        command=command,
        suffix=folders.tagged("_maxbatch", tag),
    )
    print(f"ampbench: largest-batch folder {run_dir}", file=sys.stderr, flush=True)
    with folders.locked(run_dir):
        for mode in cfg.modes:
            for variant in cfg.variants:

                def run(batch: int, mode: str = mode, variant: str = variant) -> dict:
                    row = trial(cfg.case(mode, variant, batch))
                    results.append_jsonl(run_dir / TRIALS, row)
                    print(
                        f"ampbench: {mode}/{variant} batch {batch}: {row['status']}",
                        file=sys.stderr,
                        flush=True,
                    )
                    return row

                search(run, start=cfg.start, limit=cfg.limit, resolution=cfg.resolution)
        info["ended"] = folders.iso()
        results.write_env(run_dir, info)
        render(run_dir)
    index.refresh(run_dir)  # only when the search is in the project's results/
    return run_dir
