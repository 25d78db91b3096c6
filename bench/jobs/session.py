"""A timing session (`python -m bench run`): its grid expanded into plans once, then a folder
(env.json with the machine and the grid), the ceilings, an optional short numerics study, every
case timed (`bench.jobs.suite`), the harness's overhead. `resume` runs what is not done; on
several ranks (`bench.execution.launch`) rank 0 writes and the others `follow` its plan."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from bench.cases.case import Case
from bench.cases.grid import DEFAULT_REPEATS, RunConfig  # noqa: F401 (re-exported)
from bench.execution import launch
from bench.execution.distributed import World
from bench.faults import Interrupted, UsageError, by_reason, error_summary, how_stopped
from bench.ground import catalog
from bench.jobs.suite import done_cases, run_suite
from bench.lifecycle import folder as base
from bench.measure import ceilings
from bench.measure.overhead import measure_overhead
from bench.measure.runner import free_device_memory
from bench.numerics import job as numerics
from bench.plan.plan import Plan, resolve
from bench.store import results
from bench.store.run_env import Ceilings, RunEnv

CEILING_SIZES = {
    "cuda": {"matmul_n": 8192, "copy_mib": 1024},
    "cpu": {"matmul_n": 256, "copy_mib": 16},
}
"""Ceiling problem sizes: on the GPU large enough to fill the chip and spill the L2 many times."""


log = base.log


def start(
    cfg: RunConfig,
    *,
    results_dir: Path,
    command: str,
    tag: str | None = None,
    world: World | None = None,
) -> tuple[Path, int]:
    """A new session into a new folder under `results_dir` (its name ends in `_<tag>` when
    `tag` is given); returns (folder, exit status). A rank other than 0 follows rank 0's
    session."""
    world = world or World.single(cfg.device)
    if not world.leader:
        return follow(world)
    with contextlib.ExitStack() as stack:
        with _plan_errors(world):
            plans = _plans(cfg)
            folder = stack.enter_context(
                base.new_folder(
                    results_dir, kind="timing", device=cfg.device, settings=cfg.record(),
                    command=command, tag=tag,
                )
            )  # fmt: skip
        launch.record_run_dir(folder.path)
        log(f"run folder {folder.path}")
        if cfg.device == "cpu":
            log("no GPU, so this is a CPU smoke run: its figures say nothing about GPU speed")
        if cfg.left_out:
            log(f"left out of the CPU grid, as they cannot run here: {by_reason(cfg.left_out)}")
        folder.info["expected_cases"] = len(plans)
        # What --model built, in words (a zoo model's class and task): the report says it.
        folder.info["model_description"] = plans[0].workload.description
        # The one train step's options, which the report's method names.
        folder.info["step_options"] = plans[0].step_options.describe()
        return folder.path, _execute(cfg, plans, folder, world)


def resume(run_dir: Path, *, force: bool, world: World | None = None) -> tuple[Path, int]:
    """Finish an interrupted session in its folder with its recorded grid."""
    world = world or World.single()
    if not world.leader:
        return follow(world)
    with contextlib.ExitStack() as stack:
        with _plan_errors(world):
            folder = stack.enter_context(base.resumed_folder(run_dir, kind="timing", force=force))
            try:
                cfg = RunConfig.from_record(folder.settings)
            except (TypeError, ValueError, KeyError) as exc:
                raise UsageError(
                    f"--resume {run_dir}: its recorded grid is not usable ({exc})"
                ) from exc
            if cfg.world_size != world.size:
                raise UsageError(
                    f"--resume {run_dir}: it ran on {cfg.world_size} rank(s); give --gpus "
                    f"{cfg.world_size}"
                )
            plans = _plans(cfg)
            folder.info.setdefault("expected_cases", len(plans))
        log(f"resuming {run_dir}")
        launch.record_run_dir(run_dir)
        return run_dir, _execute(cfg, plans, folder, world)


def _plans(cfg: RunConfig) -> list[Plan]:
    """The grid's cases resolved, once a session (a bad model name is one line)."""
    return [resolve(case) for case in cfg.cases()]


@contextlib.contextmanager
def _plan_errors(world: World) -> Iterator[None]:
    """On rank 0: bad input ends every rank, not only this one (the others wait for a plan)."""
    try:
        yield
    except UsageError as exc:
        world.broadcast({"error": str(exc)})
        raise


def follow(world: World) -> tuple[Path, int]:
    """A rank other than 0: take rank 0's plan and measure with it; it writes nothing."""
    plan = world.broadcast(None)
    if "error" in plan:
        return Path(), 2
    cfg = RunConfig.from_record(plan["config"])
    info = RunEnv(ceilings=plan["ceilings"])
    run_dir = Path(plan["run_dir"])
    world.run_dir = run_dir if run_dir.is_dir() else None  # on rank 0's host only
    _measure(cfg, _plans(cfg), run_dir, info, world)
    world.close()
    return run_dir, 0


def _execute(cfg: RunConfig, plans: list[Plan], folder: base.Folder, world: World) -> int:
    """Measure what is not done yet; the caller holds the folder's lock. Exit status 1 when no
    case passed."""
    run_dir, info = folder.path, folder.info
    for path in (run_dir / results.ROWS, run_dir / results.SAMPLES, run_dir / results.ROUNDS):
        repaired = results.repair_jsonl(path)
        if repaired:
            log(repaired)
    launch.complete_inflight(run_dir, "the run ended while this case ran")
    info.pop("missing_cases", None)  # what an interruption left: measured again now
    if world.distributed:
        info.setdefault("ranks", []).append(
            {"world_size": world.size, "collective_timeout_s": world.collective_timeout_s}
        )
    folder.save()
    world.broadcast(
        {"run_dir": str(run_dir), "config": cfg.record(), "ceilings": info.get("ceilings")}
    )
    cases = [plan.case for plan in plans]
    world.run_dir = run_dir
    try:
        _measure(cfg, plans, run_dir, info, world)
        world.close()
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (`Terminated`)
        done = done_cases(run_dir)
        # The report names what is missing; a resume that finishes the run clears it.
        info["missing_cases"] = [c.case_id for c in cases if c.case_id not in done]
        folder.save()
        kept = len(cases) - len(info["missing_cases"])
        how, status = how_stopped(exc)
        raise Interrupted(
            f"{how}: {kept} of {len(cases)} cases are kept in {run_dir}; "
            f"finish with: ./run_bench.sh --resume {run_dir}",
            folder=run_dir,
            status=status,
        ) from None
    folder.finish()
    rows = results.read_rows(run_dir / results.ROWS)
    ids = {c.case_id for c in cases}
    if not any(r.get("status") == "ok" for r in rows if r.get("case_id") in ids):
        log(f"no case of {len(cases)} passed")
        return 1
    return 0


def _measure(cfg: RunConfig, plans: list[Plan], run_dir: Path, info: RunEnv, world: World) -> None:
    if not info.get("ceilings"):
        if world.leader:
            log("measuring ceilings (matmul per dtype, copy bandwidth, collectives)")
        sizes = CEILING_SIZES[cfg.device]
        mine = ceilings.measure(cfg.device, **sizes).record() if world.leader else {}
        found = world.broadcast(mine)  # every rank's floors use rank 0's ceilings
        # The collectives at this model's float32 gradient size (what DDP all-reduces).
        found.update(ceilings.measure_collectives(world, plans[0].workload, plans[0].size))
        free_device_memory()  # the buffers' cached blocks would count in the first case's peak
        info["ceilings"] = Ceilings.from_record(found).record()
        if world.leader:
            results.write_env(run_dir, info)
    if cfg.numerics:
        numerics.run_short(cfg, plans[0].size, run_dir / results.NUMERICS_DIR, info)
    run_suite(
        plans, run_dir, Ceilings.from_record(info["ceilings"]), world=world, rounds=cfg.rounds
    )
    if not world.leader:
        return
    if world.distributed and cfg.overhead and "overhead" not in info:
        info["overhead"] = [{"error": "not measured in a run of several ranks"}]
        results.write_env(run_dir, info)
    elif cfg.overhead and "overhead" not in info:
        chosen = overhead_cases([plan.case for plan in plans])
        if not chosen:
            info["overhead"] = [{"error": "no eager case in the grid (it times the eager step)"}]
        else:
            info["overhead"] = []
            plan_of = {plan.case.case_id: plan for plan in plans}
            for i, case in enumerate(chosen, 1):
                log(f"harness overhead against a bare loop [{i}/{len(chosen)}] {case.case_id}")
                try:
                    info["overhead"].append(measure_overhead(plan_of[case.case_id]))
                except Exception as exc:  # recorded, not fatal: the cases are already on disk
                    info["overhead"].append({"case_id": case.case_id, "error": error_summary(exc)})
        results.write_env(run_dir, info)


def overhead_cases(cases: list[Case]) -> list[Case]:
    """The eager cases the overhead check runs on: the headline mode (bf16-amp; or the grid's
    first mode) at the smallest and the largest eager batch size, with each optimizer of the
    grid; none without an eager case (the bare loop it is compared with is the eager step). The
    smallest batch is where per-step host work (launches, GradScaler's sync) weighs most."""
    eager = [c for c in cases if c.variant == "eager" and c.parallel == "none"]
    if not eager:
        return []
    modes = {c.mode for c in eager}
    mode = catalog.headline() if catalog.headline() in modes else eager[0].mode
    sizes = sorted({c.batch_size for c in eager})
    wanted = {sizes[0], sizes[-1]}
    return [c for c in eager if c.mode == mode and c.batch_size in wanted]
