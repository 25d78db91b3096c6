"""`ampbench sweep -- python train.py ARGS`: a user's own training script run once per mode and
seed, in interleaved rounds, each run measured by the probe inside it (`bench.ownloop.contract`);
a run that fails or times out is a row with its status (docs/own-loop.md)."""

from __future__ import annotations

import dataclasses
import math
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

import pandas as pd

from bench.ground import catalog
from bench.lifecycle import packing
from bench.lifecycle.folder import Folder, log, new_folder
from bench.ownloop import contract, looks
from bench.ownloop import next_look as sweep_looks
from bench.ownloop.config import SweepConfig
from bench.ownloop.script import Runner, child_environ, run_script, tail
from bench.store import results
from bench.verdicts import driver, sequential

RUNS = "runs"
"""The sub-folder of each run's own probe folder and log."""
clock = time.monotonic
"""The clock a budget is spent by (a test injects its own)."""


def order(modes: tuple[str, ...], round_index: int) -> list[str]:
    """Round k's order: the modes turned by k, so no mode always runs first."""
    k = round_index % len(modes)
    return [*modes[k:], *modes[:k]]


def _failed_row(mode: str, seed: int, status: str, error: str, script: str, device: str) -> dict:
    return {
        "case_id": f"{results.OWN_MODEL}{script}_{mode}_seed{seed}", "mode": mode, "seed": seed,
        "model": f"{results.OWN_MODEL}{script}", "preset": "", "device": device, "optimizer": "",
        "batch_size": 1, "sizes": {"params": 1}, "status": status, "error": error,
    }  # fmt: skip


def one_run(
    job: Folder,
    cfg: SweepConfig,
    mode: str,
    seed: int,
    runner: Runner,
    side_by_side: int = 1,
    timed_look: int | None = None,
) -> tuple[dict, dict | None]:
    """Run the script under `mode` at `seed`, with `side_by_side` runs at once (itself
    included): its row (the probe's, or one that says what went wrong) and its samples
    record. `timed_look`: the speed rule's look this run alone is timed for (None: not one of
    the rule's timed runs, whether or not it ran alone)."""
    # The script's name for a row that has no model of its own: its .py file, else the program.
    script = next((Path(a).stem for a in cfg.script if a.endswith(".py")), Path(cfg.script[0]).name)
    reason = contract.unsupported_reason(mode)
    if reason is not None:
        return _failed_row(mode, seed, "unsupported", reason, script, cfg.device), None
    name = f"{mode}_seed{seed}"
    out = job.path / RUNS / name
    environ = child_environ(mode, seed, out)
    started_at = time.time()
    start = time.perf_counter()
    code, output = runner(list(cfg.script), environ, job.path / RUNS / f"{name}.log", cfg.timeout_s)
    elapsed = time.perf_counter() - start
    ended_at = time.time()
    rows = results.read_rows(out / results.ROWS)  # none where the script wrote none
    if code != 0:
        status = "timeout" if code is None else "failed"
        what = f"ran past {cfg.timeout_s:g} s" if code is None else f"exited with status {code}"
        error = f"the script {what}; its last lines:\n{tail(output)}"
        row = {**(rows[-1] if rows else _failed_row(mode, seed, status, "", script, cfg.device))}
        row.update(status=status, error=error, mode=mode, seed=seed)
    elif not rows:
        error = (
            f"the script wrote no probe folder at {contract.OUT}: does it measure with "
            "bench.probe or a callback?"
        )
        row = _failed_row(mode, seed, "error", error, script, cfg.device)
    else:
        row = rows[-1]
        if row.get("mode") != mode:
            note = (
                f"the run's settings show {row.get('mode')}, not {mode}: the script does not "
                f"apply {contract.MODE}"
            )
            row.update(status="error", error=note, mode_seen=row.get("mode"), mode=mode)
    row.update(run=f"{RUNS}/{name}", elapsed_s=elapsed, round=cfg.seed_order().index(seed))
    row.update(ran="alone" if side_by_side == 1 else "packed", side_by_side=side_by_side,
               started_at_s=started_at, ended_at_s=ended_at)  # fmt: skip
    row["timed_look"] = timed_look
    row["case_id"] = f"{row['model']}_{mode}_seed{seed}"
    samples = results.read_rows(out / results.SAMPLES)  # none where the script wrote none
    record = {**samples[-1], "case_id": row["case_id"]} if samples else None
    return row, record


def _one_line(row: dict) -> str:
    """A failed run's error for the terminal: its first line, and where a script's last lines
    follow it, the very last of them and the log that holds them all."""
    lines = [line for line in str(row.get("error", "")).splitlines() if line.strip()]
    if len(lines) <= 1:
        return lines[0] if lines else ""
    return f"{lines[0].removesuffix(':')} … {lines[-1].strip()} (the whole log: {row['run']}.log)"


def _grid(rows: list[dict]) -> dict[str, object]:
    """What the index reads of a timing run's config, from the runs' rows: the model, the
    batch sizes and the optimizers the script used."""
    ok = [r for r in rows if r.get("status") == "ok"] or rows
    return {
        "model": ok[0].get("model", "") if ok else "",
        "batch_sizes": sorted({int(r["batch_size"]) for r in ok if r.get("batch_size")}),
        "optimizers": sorted({str(r["optimizer"]) for r in ok if r.get("optimizer")}),
    }


def run(
    cfg: SweepConfig,
    *,
    results_dir: Path,
    command: str,
    tag: str | None = None,
    runner: Runner = run_script,
) -> Path:
    """Every run of the grid, round by round, into a new folder; returns it."""
    settings = {**dataclasses.asdict(cfg), "own_loop_driver": True}
    with new_folder(
        results_dir, kind="timing", device=cfg.device, settings=settings, command=command,
        suffix="_sweep", tag=tag,
    ) as job:  # fmt: skip
        (job.path / RUNS).mkdir()
        started = clock()
        job.info.update(speed_plan=cfg.speed_plan().record(), min_effect=cfg.min_effect)
        alone, rest = cfg.seeds[: cfg.timed_seeds], cfg.seeds[cfg.timed_seeds :]
        for k, seed in enumerate(alone):
            for mode in order(cfg.modes, k):
                log(f"round {k + 1}/{len(cfg.seeds)}: {mode}, seed {seed}, alone")
                _keep(job, *one_run(job, cfg, mode, seed, runner, timed_look=1))
        todo = [(m, s) for k, s in enumerate(rest, len(alone)) for m in order(cfg.modes, k)]
        run_packed(job, cfg, todo, runner)
        if cfg.design() is not None:
            _looks(job, cfg, runner, started)
        job.settings.update(_grid(results.read_rows(job.path / results.ROWS)))
        job.finish()
    return job.path


def _keep(job: Folder, row: dict, record: dict | None) -> None:
    results.append_jsonl(job.path / results.ROWS, row)
    if record is not None:
        results.append_jsonl(job.path / results.SAMPLES, record)
    if row["status"] != "ok":
        log(f"{row['mode']}, seed {row['seed']}: {row['status']}: {_one_line(row)}")


def workers_for(job: Folder, cfg: SweepConfig, runs: int) -> tuple[int, str]:
    """How many of `runs` run side by side, and why: sized by the largest peak of the runs so
    far (the probe's allocated peak; the context and the allocator's cache are in
    `packing.CONTEXT_GIB` and its memory share)."""
    rows = results.frame(results.read_rows(job.path / results.ROWS))
    ok = rows[rows["status"] == "ok"] if len(rows) else rows
    peaks = pd.to_numeric(ok.get("peak_alloc_gib", pd.Series()), errors="coerce").dropna()
    peak = float(peaks.max()) if len(peaks) else None
    return packing.side_by_side(cfg.workers, cfg.device, peak, runs)


def run_packed(job: Folder, cfg: SweepConfig, todo: list[tuple[str, int]], runner: Runner) -> None:
    """Run `todo` ((mode, seed) pairs), side by side as `workers_for` says; with one at a
    time, in order, each a run alone."""
    if not todo:
        return
    workers, why = workers_for(job, cfg, len(todo))
    log(f"{len(todo)} runs, {workers} at a time ({why})")
    if workers == 1:
        for mode, seed in todo:
            _keep(job, *one_run(job, cfg, mode, seed, runner))
        return
    # Threads, not processes: each waits on its own script's process.
    with ThreadPoolExecutor(workers) as pool:
        futures = [pool.submit(one_run, job, cfg, m, s, runner, workers) for m, s in todo]
        for future in as_completed(futures):
            row, record = future.result()
            log(f"{row['mode']}, seed {row['seed']}: {row['status']} (packed)")
            _keep(job, row, record)


def judge_looks(run_dir: Path, cfg: SweepConfig, taken: list[int]) -> dict[str, sequential.Judged]:
    """Each mode's verdict over the looks taken (`bench.verdicts.sequential.judge_each`)."""
    rows = results.frame(results.read_rows(run_dir / results.ROWS))
    summary, metric, _ = looks.summary(run_dir, rows, cfg.metric)
    if metric is None:
        return {}
    return sequential.judge_each(
        summary, cfg.modes, cfg.design(), taken, cfg.seed_order(), cfg.expected_drop
    )


def judge_speed(run_dir: Path, cfg: SweepConfig) -> list[str]:
    """The modes whose speed is still `unclear` (`bench.ownloop.looks.speed`)."""
    rows = pd.DataFrame(results.read_rows(run_dir / results.ROWS))
    if rows.empty or catalog.reference() not in set(rows["mode"]):
        return []
    verdicts = looks.speed(run_dir, rows, catalog.reference())
    return [m for m in driver.undecided(verdicts) if m in cfg.modes]


def _look_s(job: Folder, cfg: SweepConfig, runs: int, alone: int = 0) -> float:
    """A look's time, about: `alone` runs one after another, then `runs` runs `workers` at a
    time, each as long as the longest so far."""
    elapsed = [float(r.get("elapsed_s", 0)) for r in results.read_rows(job.path / results.ROWS)]
    return (alone + math.ceil(runs / workers_for(job, cfg, runs)[0])) * max(elapsed, default=0)


def _looks(job: Folder, cfg: SweepConfig, runner: Runner, started: float) -> None:
    """Look after look: judge speed and training, then time fp32 and each mode whose speed is
    undecided alone once more, and add seeds (packed) to fp32 and the modes whose training is
    undecided, until each is decided, the cap, or the budget. Records the looks taken, the
    timed looks, and why they ended."""
    design, seeds, plan = cfg.design(), cfg.seed_order(), cfg.speed_plan()
    taken, timed = [design.first], 1
    while True:
        job.info.update(looks=taken, design=design.record(), seed_order=list(seeds),
                        timed_looks=timed)  # fmt: skip
        job.save()
        judged = judge_looks(job.path, cfg, taken)
        train = sequential.undecided(judged)
        fast = judge_speed(job.path, cfg) if timed < plan.looks else []
        if not train and not fast:
            job.info["looks_ended"] = "every mode decided"
            break
        left = cfg.budget_s - (clock() - started) if cfg.budget_s else None
        ones = order(tuple(m for m in (catalog.reference(), *fast) if m in cfg.modes), timed)
        look = sweep_looks.plan(
            design, seeds, [m for m in (catalog.reference(), *train) if m in cfg.modes and train],
            ones if fast else [], taken, sweep_looks.target(judged, train),
            wave=lambda runs: workers_for(job, cfg, runs)[0],
            look_s=lambda packed, alone: _look_s(job, cfg, packed, alone), left_s=left,
        )  # fmt: skip
        if look is None:
            ended = "the cap" if design.next_look(taken[-1]) is None else "the budget"
            job.info.update(looks_ended=ended, undecided_speed=fast,
                            undecided=sorted({*train, *fast}, key=cfg.modes.index))  # fmt: skip
            break
        n, alone, packed = look
        log(f"look at {n} seeds: {', '.join(m for m, _ in alone)} timed alone; "
            f"{', '.join(dict.fromkeys(m for m, _ in packed)) or 'none'} packed")  # fmt: skip
        if alone:
            timed += 1
            for mode, seed in alone:
                _keep(job, *one_run(job, cfg, mode, seed, runner, timed_look=timed))
        run_packed(job, cfg, packed, runner)
        taken.append(n)
    job.info["timed_looks"] = timed
    log(f"looks at {', '.join(map(str, taken))} seeds: ended by {job.info['looks_ended']}")
    job.save()
