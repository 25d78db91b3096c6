"""The largest batch (`python -m bench maxbatch`): per mode (and variant), doubling then bisecting
the batch size until a trial fails, every trial a row of `trials.jsonl`, each isolated by a full
cleanup whose leftover memory its row records (docs/largest-batch.md)."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import torch

from bench.cases.case import Case
from bench.cases.maxbatch import MaxBatchConfig
from bench.execution.variants import prepare
from bench.faults import Interrupted, fault, how_stopped
from bench.lifecycle import folder as base
from bench.measure.memory import GIB
from bench.measure.runner import free_device_memory
from bench.measure.stats import summarize
from bench.measure.timing import clock_for, time_settled
from bench.plan.plan import Plan, resolve
from bench.plan.step import build, watch
from bench.store import errors, results
from bench.workloads import registry


def trial_case(cfg: MaxBatchConfig, mode: str, variant: str, batch_size: int) -> Case:
    """The case a trial of `cfg` trains: `mode` and `variant` at `batch_size`."""
    return registry.make_case(
        cfg.model,
        cfg.preset,
        mode=mode,
        variant=variant,
        optimizer=cfg.optimizer,
        batch_size=batch_size,
        device=cfg.device,
        warmup=cfg.warmup,
        steps=cfg.steps,
    )


def _cleanup(plan: Plan) -> float:
    """Drop everything a trial left, and return the GiB still allocated (0 on the CPU)."""
    free_device_memory(compiled=plan.variant.compile_mode is not None)
    return torch.cuda.memory_allocated() / GIB if plan.case.device == "cuda" else 0.0


def _train(plan: Plan) -> dict[str, object]:
    """Build the case and train `warmup + steps` full steps. Every tensor it makes is a local of
    this frame, so all of it is unreachable once it returns or raises."""
    case = plan.case
    s = build(plan, capturable=plan.variant.capture)
    prepared = prepare(s)
    samples = time_settled(
        prepared.phases,
        warmup=case.warmup,
        steps=case.steps,
        clock=clock_for(case.device),
        watch=watch(s),
    )
    total_ms = summarize(samples["total"])["median"]
    out: dict[str, object] = {
        "total_ms": total_ms,
        "samples_per_s": case.batch_size / (total_ms * 1e-3),
    }
    workload = plan.workload
    if workload.unit == "tokens":  # as a timing row has it (`bench.measure.runner`)
        out["tokens_per_s"] = out["samples_per_s"] * workload.per_sample(plan.size)
    if not all(math.isfinite(v) for v in torch.stack(prepared.losses).float().tolist()):
        out.update(status="nonfinite", error="a loss was not finite")
    return out


def trial(plan: Plan) -> dict[str, object]:
    """One trial of the search: a flat row with its status, throughput and peak memory, and the
    memory still allocated after the cleanup that follows it."""
    case = plan.case
    row: dict[str, object] = {"case_id": case.case_id, **case.axes(), "status": "ok", "error": ""}
    reason = plan.unsupported_reason
    if reason is not None:
        return {**row, "status": "unsupported", "error": reason}
    cuda = case.device == "cuda"
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    try:
        row.update(_train(plan))
    except Exception as exc:  # the failure is the finding: a row, and the search goes on
        row.update(fault(exc))
    # Out of the except block: the exception and the frames it held are gone, and with them the
    # failed trial's tensors.
    if cuda:
        row["peak_alloc_gib"] = torch.cuda.max_memory_allocated() / GIB
        row["peak_reserved_gib"] = torch.cuda.max_memory_reserved() / GIB
    row["leftover_gib"] = _cleanup(plan)
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
    # Each (mode, variant) resolved once, here; a trial is its plan at a batch size.
    plans = [resolve(trial_case(cfg, m, v, cfg.start)) for m in cfg.modes for v in cfg.variants]
    with base.new_folder(
        results_dir, kind="maxbatch", device=cfg.device, settings=cfg.record(), command=command,
        suffix="_maxbatch", tag=tag,
    ) as folder:  # fmt: skip
        base.log(f"largest-batch folder {folder.path}")
        try:
            for plan in plans:

                def run(batch: int, plan: Plan = plan) -> dict:
                    row = trial(plan.with_case(batch_size=batch))
                    row = errors.keep(folder.path, row, str(row["case_id"]))
                    results.append_jsonl(folder.path / results.TRIALS, row)
                    base.log(f"{row['mode']}/{row['variant']} batch {batch}: {row['status']}")
                    return row

                search(run, start=cfg.start, limit=cfg.limit, resolution=cfg.resolution)
        except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: its command renders what finished
            how, status = how_stopped(exc)
            raise Interrupted(
                f"{how}: the trials that finished are kept in {folder.path}; a search starts "
                "afresh (--modes and --start choose where)",
                folder=folder.path,
                status=status,
            ) from None
        folder.finish()
    return folder.path
