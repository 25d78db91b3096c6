"""Spreading independent jobs over the GPUs of one machine: one worker process per GPU.

Each worker pins itself to one GPU when it starts and takes jobs from a shared queue, the most
costly first, so that a long job does not start last. With one GPU, or on the CPU, the jobs run in
this process, one after another. `on_done` sees each result in this process as soon as its job
ends, so a caller can keep it on disk before the rest finish (and resume after an interruption).
"""

from __future__ import annotations

import multiprocessing as mp
import sys
from collections.abc import Callable, Iterable
from typing import TypeVar

import torch

J = TypeVar("J")
R = TypeVar("R")


def _pin(gpus: mp.Queue) -> None:
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
