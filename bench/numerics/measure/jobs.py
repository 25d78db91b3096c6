"""Running the study's jobs (`config.Job`): `run_job` turns a fault into a `failed` row; `run_all`
spreads them over a worker per GPU, costliest first, `on_done` seeing each result as it ends."""

from __future__ import annotations

import multiprocessing as mp
import sys
from collections.abc import Callable, Iterable
from typing import TypeVar

import torch

from bench import quiet
from bench.faults import fault
from bench.numerics.measure import training
from bench.numerics.measure.config import Job
from bench.plan.plan import modes_of, resolve  # each worker resolves its own cases


def run_job(job: Job) -> dict[str, list[dict]]:
    """Rows by table name; a fault becomes a `failed` row with its traceback."""
    c = job.case
    row = {"kind": job.kind, "mode": c.mode, "batch_size": c.batch_size, "seed": c.seed}
    plan = resolve(c)
    reason = plan.unsupported_reason
    if reason is not None:  # torchao missing, or no float8 GPU: a row that says so
        return {"failed": [{**row, "status": "unsupported", "error": reason}]}
    try:
        if job.kind == "convergence":
            return training.convergence(
                plan,
                steps=job.steps,
                noise=job.noise,
                eval_every=job.eval_every,
                heldout=job.heldout,
                trace_every=job.trace_every,
            )
        return training.census_trajectory(
            plan,
            modes_of(training.CENSUS_ALL),
            noise=job.noise,
            checkpoints=job.checkpoints,
            histogram=job.histogram,
        )
    except Exception as exc:  # recorded; the other jobs go on
        return {"failed": [{**row, **fault(exc)}]}
    finally:
        if torch.cuda.is_available():
            torch.cuda.empty_cache()


J = TypeVar("J")
R = TypeVar("R")


def _pin(gpus: mp.Queue) -> None:
    quiet.quiet()  # a spawned worker starts with Python's filters, not the command line's
    gpu = gpus.get()
    if torch.cuda.is_available():  # on a CPU-only machine the workers just run side by side
        torch.cuda.set_device(gpu)


def run_all(
    fn: Callable[[J], R],
    jobs: Iterable[J],
    *,
    workers: int,
    cost: Callable[[J], float],
    describe: Callable[[J], str] = str,
    on_done: Callable[[J, R], None] | None = None,
) -> list[R]:
    """fn(job) for every job, on `workers` GPUs; results in the order the jobs were given."""
    jobs = list(jobs)
    order = sorted(range(len(jobs)), key=lambda i: -cost(jobs[i]))
    results: list[R | None] = [None] * len(jobs)

    def finish(done: int, i: int, result: R) -> None:
        results[i] = result
        if on_done is not None:
            on_done(jobs[i], result)
        print(f"[{done}/{len(jobs)}] done: {describe(jobs[i])}", file=sys.stderr, flush=True)

    if workers <= 1:
        for done, i in enumerate(order, 1):
            finish(done, i, fn(jobs[i]))
        return results  # type: ignore[return-value]
    # spawn, not fork: CUDA cannot be re-initialised in a forked child.
    ctx = mp.get_context("spawn")
    gpus = ctx.Queue()
    for g in range(workers):
        gpus.put(g)
    with ctx.Pool(workers, initializer=_pin, initargs=(gpus,)) as pool:
        indexed = pool.imap_unordered(_call, [(fn, i, jobs[i]) for i in order], chunksize=1)
        for done, (i, result) in enumerate(indexed, 1):
            finish(done, i, result)
    return results  # type: ignore[return-value]


def _call(item: tuple[Callable, int, object]) -> tuple[int, object]:
    fn, i, job = item
    return i, fn(job)
