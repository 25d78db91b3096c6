"""Running one case into one flat row and its raw samples; a case's faults are data (`oom`,
`nonfinite`, `timeout`, `error`, `unsupported`), and a row an exception ended carries its
traceback (`bench.faults.fault`)."""

from __future__ import annotations

import functools
import gc
import math
from collections.abc import Callable

import torch
from torch import nn

from bench.cases.case import Case
from bench.execution import parallel, variants
from bench.execution.distributed import World
from bench.faults import fault
from bench.measure import memory
from bench.measure.adaptive import StopRule
from bench.measure.derived import Floor, derived_columns
from bench.measure.roofline import Work, cast_columns, comm_floor_columns, floor_columns, step_work
from bench.measure.stats import summarize
from bench.measure.timing import (
    WARMUP_MS,
    NoTrainingStep,
    clock_for,
    settle,
    time_phases,
    time_windows,
)
from bench.modes import fp8
from bench.modes.mode import Mode, dtype_name, tf32_flags
from bench.plan.plan import Plan
from bench.plan.step import ScaleWatch, TrainState, build, watch
from bench.store import results
from bench.store.run_env import Ceilings
from bench.store.schema import Row


def free_device_memory(*, compiled: bool = False) -> None:
    """Give back what a finished case (or trial) held: collect its garbage, free cuBLAS's
    workspaces and empty the CUDA caching allocator. `compiled`: also reset dynamo, whose cache
    holds the compiled graph and, through it, the case's model.

    cuBLAS keeps a workspace (32 MiB on an H200) per stream that ran a matmul, in the caching
    allocator: left alone, they would be the next case's starting allocation, growing with every
    stream a case used. The next matmul makes its workspace again, inside the case that needs it."""
    if compiled:
        torch._dynamo.reset()
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
        clear = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)
        if clear is not None:  # private, present since torch 1.13; absent: workspaces stay
            clear()
        torch.cuda.empty_cache()


PHASES = tuple(results.PHASES)
PEAK_PHASE_COLUMNS = ("peak_fwd_gib", "peak_bwd_gib", "peak_opt_gib")


def _matmul_ceilings(
    mode: Mode, plan: dict[str, str], ceilings: Ceilings
) -> tuple[float, dict[str, float]]:
    """The ceiling of every matmul (the mode's unconverted matmul dtype's), and those of the
    Linears a float8 mode converted, by module name (float8's)."""
    other = ceilings.matmul(mode.unconverted_matmul_dtype)
    low = ceilings.matmul(mode.matmul_dtype)
    return other, {name: low for name, what in plan.items() if what == "converted"}


def global_batch_size(plan: Plan, world_size: int) -> int:
    """Samples one optimizer step consumes: every rank's batch when the ranks train one model
    (weak scaling), the case's batch when each rank trains its own copy (`parallel=none`)."""
    return plan.case.batch_size * (world_size if plan.parallel.distributed else 1)


def run_case(
    plan: Plan, ceilings: Ceilings, world: World | None = None
) -> tuple[Row, dict[str, list[float]]]:
    """Measure one case, resolved into its plan (`bench.plan.plan.resolve`), on this rank;
    returns its flat row and its raw per-phase samples (empty on a fault): `case.min_repeats` to
    `case.repeats` timed windows of `case.steps` samples each, and for a distributed case a
    window without gradient synchronization (`nosync_<phase>`). A case that cannot go on ends
    with the columns it has so far and its status."""
    case, mode = plan.case, plan.mode
    world = world or World.single(case.device)
    row = _case_columns(plan, world, ceilings)
    # A workload that cannot be built here (a package it needs is missing) has no float8 plan,
    # no counted work and no floors: its row is its reason alone.
    if plan.workload.unsupported_reason() is not None:
        return {**row, "status": "unsupported", "error": plan.unsupported_reason}, {}
    try:
        work = step_work(plan.workload, plan.size, case.batch_size, case.device)
    except Exception as exc:  # a user's model that cannot run even to be counted: a row
        return {**row, **fault(exc)}, {}
    row |= _floors(plan, work, world, ceilings)
    with mode.context(case.device):
        row |= tf32_flags()  # as the step's phases set them
    reason = plan.unsupported_in(world.size)
    if reason is not None:
        return {**row, "status": "unsupported", "error": reason}, {}
    if plan.parallel.distributed:
        comm = parallel.collective_bytes(work.num_params, plan.parallel, mode)
        row |= comm_floor_columns(comm, world.size, ceilings)
        row["floor_ms"] += row["comm_floor_ms"]  # the step's floor: its phases' and collectives'
    measured, samples = _measure(plan, world, Floor.of(row))
    return {**row, **measured}, samples


def _case_columns(plan: Plan, world: World, ceilings: Ceilings) -> Row:
    """The columns every row has, an unsupported or failed one's too: the case's axes, its
    status (`ok` until something says otherwise), where it ran, the mode as it runs and the
    ceilings its floors are built on."""
    case, mode = plan.case, plan.mode
    return {  # type: ignore[typeddict-unknown-key]  # the axes are Case's fields
        "case_id": case.case_id,
        **case.axes(),
        "status": "ok",
        "error": "",
        "world_size": world.size,
        **world.place(),  # host, node_rank, local_rank
        "nodes": world.nodes,
        "global_batch_size": global_batch_size(plan, world.size),
        "autocast_dtype": dtype_name(mode.autocast_dtype),
        "param_dtype": dtype_name(mode.param_dtype or torch.float32),
        "scale_loss": mode.scale_loss,
        "matmul_dtype": mode.matmul_dtype,
        # A ceiling an older folder (or a GPU without float8) did not measure: no floor (NaN).
        "ceiling_tflops": ceilings.matmul(mode.matmul_dtype),
        "copy_gbps": ceilings.copy_gbps,
        "optimizer_impl": mode.optimizer_name(case.optimizer),
        "fp8_linears": fp8.describe(plan.fp8_plan),
    }


def _floors(plan: Plan, work: Work, world: World, ceilings: Ceilings) -> dict[str, object]:
    """The step's counted work and the floor each phase has on the measured ceilings (matmuls
    at their dtype's, float8's for the Linears the mode converted; the optimizer and the
    casts at the copy bandwidth). FSDP shards the optimizer's bytes over the ranks."""
    mode = plan.mode
    matmul_tflops, linear_tflops = _matmul_ceilings(mode, plan.fp8_plan, ceilings)
    columns = floor_columns(
        work,
        matmul_tflops=matmul_tflops,
        linear_tflops=linear_tflops,
        scale_loss=mode.scale_loss,
        copy_gbps=ceilings.copy_gbps,
        param_bytes=mode.param_bytes,
        shards=world.size if plan.parallel.kind == "fsdp" else 1,
    )
    return {**columns, **cast_columns(work, mode, ceilings.copy_gbps)}


def _measure(
    plan: Plan, world: World, floor: Floor
) -> tuple[dict[str, object], dict[str, list[float]]]:
    """Build the case and measure it: memory in an eager pass, then the timed windows, the
    figures derived from them, what the losses say and, for a distributed case, the window
    without gradient synchronization. Returns the measured columns and the samples; a fault
    is columns with its status (and no samples). Whatever the case held is freed before this
    returns, so the next case starts from what this one found."""
    case, mode, variant = plan.case, plan.mode, plan.variant
    cuda = case.device == "cuda"
    # Memory still allocated before the case is built (by the caller, or left by an earlier case)
    # is not the case's: it is recorded, and taken out of the case's allocated peaks.
    residue = torch.cuda.memory_allocated() / memory.GIB if cuda else math.nan
    columns: dict[str, object] = {"residue_gib": residue}
    samples: dict[str, list[float]] = {}
    s: TrainState | None = None
    prepared: variants.Prepared | None = None
    try:
        s = build(plan, capturable=variant.capture, wrap=_wrapper(plan, world))
        # Memory first, in an eager pass of its own: it syncs between phases. The peak counters
        # start again after it, for a variant's own peak (`_peaks`).
        eager_memory = memory.measure(s)
        columns |= eager_memory
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        prepared = variants.prepare(s)
        columns |= {"prepare_s": prepared.prepare_s, "eager_parts": prepared.eager_parts}
        samples, how = _timed_windows(case, prepared, watch(s))
        columns |= how
        recompiled = bool(how["recompiled"])
        columns |= _peaks(case, eager_memory, residue)
        derived = derived_columns(plan, samples, floor)
        columns |= derived
        scaler = s.scaler if mode.scale_loss else None
        columns |= _loss_columns(prepared.losses, scaler, recompiled=recompiled)
        if plan.parallel.distributed:
            synced_ms = derived["fwd_ms"] + derived["bwd_ms"]
            nosync_columns, nosync = _without_sync(s, prepared, synced_ms)
            columns |= nosync_columns
            samples |= nosync
    except NoTrainingStep as exc:  # an expected numerical outcome, not a fault of the code
        columns |= {"status": "nonfinite", "error": str(exc)}
        samples = {}
    except Exception as exc:  # a fault is recorded as a row; the suite goes on
        columns |= fault(exc)
    finally:
        s = prepared = None
        free_device_memory(compiled=variant.compile_mode is not None)
    return columns, samples


def _wrapper(plan: Plan, world: World) -> Callable[[nn.Module, Mode], nn.Module] | None:
    """How `build` wraps the model for the case's parallelism (DDP, or FSDP2 over the
    workload's blocks, on the run's data group); None for a case each rank trains alone."""
    if not plan.parallel.distributed:
        return None
    return functools.partial(
        parallel.wrap,
        parallel=plan.parallel,
        group=world.data,
        device=plan.case.device,
        blocks=lambda model: plan.workload.blocks_of(model, plan.size),
    )


def _timed_windows(
    case: Case, prepared: variants.Prepared, scale_watch: ScaleWatch | None
) -> tuple[dict[str, list[float]], dict[str, object]]:
    """The samples of `case.min_repeats` to `case.repeats` timed windows, and the columns that
    say how they were timed: `windows` (how many), `windows_stop` (why no more,
    `bench.measure.adaptive`), `recompiled` (whether the variant compiled a graph while they
    ran: a recompilation would be timed with them) and `scale_warmup_steps` (the untimed steps
    a scaled mode ran until its loss scale settled, `bench.measure.timing.settle`; 0 for a
    mode that does not scale). With `scale_watch`, a timed step GradScaler skipped is left out
    of the statistics and counted (`skipped_steps`)."""
    clock = clock_for(case.device)
    graphs_before = prepared.compiled_graphs()
    settled = settle(prepared.phases, scale_watch, clock) if scale_watch is not None else 0
    windows, why = time_windows(
        prepared.phases,
        warmup=case.warmup,
        steps=case.steps,
        rule=StopRule.between(case.min_repeats, case.repeats),
        clock=clock,
        warmup_ms=WARMUP_MS,
        watch=scale_watch,
    )
    # The row's statistics are over every step of every window, one window after another;
    # `repeat_windows` splits them back, `case.steps` at a time.
    samples = {name: [ms for w in windows for ms in w[name]] for name in windows[0]}
    recompiled = prepared.compiled_graphs() != graphs_before
    return samples, {
        "windows": len(windows),
        "windows_stop": why,
        "recompiled": recompiled,
        "scale_warmup_steps": settled,
    }


def _peaks(case: Case, eager_memory: dict[str, object], residue: float) -> dict[str, float]:
    """The case's own peaks, read after the timed window, from the eager pass's memory columns
    (`bench.measure.memory`). The eager pass's phase peaks say nothing of another variant: its
    own peak is the highest allocation over compiling (or capturing) and the timed window. On
    CUDA, memory the case found allocated (`residue`) is taken out of the allocated peaks."""
    cuda = case.device == "cuda"
    peaks: dict[str, float] = {}
    if case.variant != "eager":
        peaks |= dict.fromkeys(PEAK_PHASE_COLUMNS, math.nan)
        if cuda:
            peaks["peak_alloc_gib"] = torch.cuda.max_memory_allocated() / memory.GIB
            peaks["peak_reserved_gib"] = torch.cuda.max_memory_reserved() / memory.GIB
    if cuda:
        measured = {**eager_memory, **peaks}
        for key in ("peak_alloc_gib", *PEAK_PHASE_COLUMNS):
            peaks[key] = measured[key] - residue
    return peaks


def _loss_columns(
    losses: list[torch.Tensor], scaler: torch.amp.GradScaler | None, *, recompiled: bool
) -> dict[str, object]:
    """What the timed window left, read after it (reading values back syncs, which is fine
    now): the last loss, GradScaler's scale (None for a mode that does not scale), a status of
    `nonfinite` when a loss was not finite, and for an `ok` case that recompiled during the
    window, a note saying so."""
    loss_values = torch.stack(losses).float()
    columns: dict[str, object] = {
        "final_loss": loss_values[-1].item(),
        "grad_scale": scaler.get_scale() if scaler is not None else None,
    }
    if not torch.isfinite(loss_values).all().item():
        n_bad = int((~torch.isfinite(loss_values)).sum().item())
        columns["status"] = "nonfinite"
        columns["error"] = f"{n_bad} of {len(losses)} losses were not finite"
    elif recompiled:
        columns["error"] = "recompiled during the timed window"
    return columns


def _without_sync(
    s: TrainState, prepared: variants.Prepared, synced_ms: float
) -> tuple[dict[str, float], dict[str, list[float]]]:
    """A second window of forward and backward with gradient synchronization off
    (`bench.execution.parallel.gradient_sync_off`): `comm_ms` is the forward-plus-backward median
    with it on (`synced_ms`) less that with it off, the communication the step could not hide.
    The optimizer phase is left out of both (with FSDP it would find no gradient to step);
    gradients are dropped after each step, as the optimizer phase does. Returns its columns and
    its samples, as `nosync_fwd`, ...."""
    case = s.case
    phases = {
        "fwd": prepared.phases["fwd"],
        "bwd": prepared.phases["bwd"],
        "zero": lambda: s.optimizer.zero_grad(set_to_none=True),
    }
    with parallel.gradient_sync_off(s.wrapper, s.plan.parallel):
        nosync = time_phases(phases, warmup=1, steps=case.steps, clock=clock_for(case.device))
    unsynced = summarize(nosync["fwd"])["median"] + summarize(nosync["bwd"])["median"]
    columns = {
        "nosync_fwd_bwd_ms": unsynced,
        # The two windows' medians differ by noise too: communication that was all hidden reads
        # as a small negative difference, which is none.
        "comm_ms": max(synced_ms - unsynced, 0.0),
    }
    return columns, {f"nosync_{k}": v for k, v in nosync.items() if k != "total"}
