"""Running one case into one flat row and its raw samples.

A case's faults are data: out of memory gives status `oom`, a non-finite loss `nonfinite`, a
collective that timed out `timeout`, any other exception `error` with its message, and a
workload, variant or parallelism that cannot run here `unsupported` with the reason. A row an
exception ended carries its traceback (`bench.faults.fault`), which the job saves in its folder.
In a run of several ranks every rank measures the case here, and `bench.measure.ranks` makes one
row of their rows; the loop over a grid's cases, which writes them into a folder, is the job's
(`bench.jobs.suite`).
"""

from __future__ import annotations

import functools
import gc
import math

import torch

from bench.cases.case import Case
from bench.execution import parallel, variants
from bench.execution.distributed import World
from bench.execution.variants import VARIANTS, unsupported_reason
from bench.faults import fault
from bench.measure import memory
from bench.measure.roofline import cast_columns, comm_floor_columns, floor_columns, step_work
from bench.measure.stats import is_noisy, phase_columns, summarize
from bench.measure.timing import clock_for, time_phases, time_repeats
from bench.recipes import fp8
from bench.recipes.modes import MODES, Mode, dtype_name, tf32_flags
from bench.recipes.step import TrainState, build
from bench.store import results
from bench.store.schema import Row
from bench.workloads import registry


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


def _derived(case: Case, samples: dict[str, list[float]], floor: dict[str, float]) -> dict:
    """Statistics of the samples and the figures derived from them. A phase the variant fused
    away (no samples of its own) gets no columns: it was not measured. `tflops` is per GPU: the
    matmul work of one rank's batch over the step."""
    row: dict[str, object] = phase_columns(samples)
    total_ms = row["total_ms"]
    gflop = floor["fwd_gflop"] + floor["bwd_gflop"]
    row["samples_per_s"] = floor["global_batch_size"] / (total_ms * 1e-3)
    workload = registry.get(case.model)
    if workload.unit == "tokens":  # a sample of a token workload is a sequence of them
        row["tokens_per_s"] = row["samples_per_s"] * workload.per_sample(registry.size_of(case))
    row["samples_per_s_per_gpu"] = case.batch_size / (total_ms * 1e-3)
    row["tflops"] = gflop / total_ms  # GFLOP per ms is TFLOP per s
    row["pct_of_floor"] = floor["floor_ms"] / total_ms * 100
    for phase in PHASES:
        if phase in samples:
            row[f"{phase}_pct_of_floor"] = floor[f"{phase}_floor_ms"] / row[f"{phase}_ms"] * 100
            row[f"{phase}_share"] = row[f"{phase}_ms"] / total_ms
    row["noisy"] = is_noisy(samples["total"])
    return row


def _matmul_ceilings(
    mode: Mode, plan: dict[str, str], ceilings: dict[str, float]
) -> tuple[float, dict[str, float]]:
    """The ceiling of every matmul (the mode's unconverted matmul dtype's), and those of the
    Linears a float8 recipe converted, by module name (float8's)."""
    other = ceilings.get(f"matmul_tflops_{mode.unconverted_matmul_dtype}", math.nan)
    low = ceilings.get(f"matmul_tflops_{mode.matmul_dtype}", math.nan)
    return other, {name: low for name, what in plan.items() if what == "converted"}


def global_batch_size(case: Case, world_size: int) -> int:
    """Samples one optimizer step consumes: every rank's batch when the ranks train one model
    (weak scaling), the case's batch when each rank trains its own copy (`parallel=none`)."""
    return case.batch_size * (world_size if parallel.PARALLELS[case.parallel].distributed else 1)


def run_case(
    case: Case, ceilings: dict[str, float], world: World | None = None
) -> tuple[Row, dict[str, list[float]]]:
    """Measure one case on this rank; returns its flat row and its raw per-phase samples (empty
    on a fault): `case.repeats` timed windows of `case.steps` samples each, one after another. A
    distributed case also times a window without gradient synchronization, whose samples come
    back under `nosync_<phase>`."""
    world = world or World.single(case.device)
    mode = MODES[case.mode]
    variant = VARIANTS[case.variant]
    par = parallel.PARALLELS[case.parallel]
    # A workload that cannot be built here (a package it needs is missing) has no plan, no
    # counted work and no floors: its row is its reason alone.
    workload = registry.get(case.model)
    missing = workload.unsupported_reason() is not None
    plan = {} if missing else mode.fp8_plan(workload, registry.size_of(case))
    row: Row = {  # type: ignore[typeddict-unknown-key]  # the axes are Case's fields
        "case_id": case.case_id,
        **case.axes(),
        "status": "ok",
        "error": "",
        "world_size": world.size,
        **world.place(),  # host, node_rank, local_rank
        "nodes": world.nodes,
        "global_batch_size": global_batch_size(case, world.size),
        "autocast_dtype": dtype_name(mode.autocast_dtype),
        "param_dtype": dtype_name(mode.param_dtype or torch.float32),
        "scale_loss": mode.scale_loss,
        "matmul_dtype": mode.matmul_dtype,
        # A ceiling an older folder (or a GPU without float8) did not measure: no floor (NaN).
        "ceiling_tflops": ceilings.get(f"matmul_tflops_{mode.matmul_dtype}", math.nan),
        "copy_gbps": ceilings["copy_gbps"],
        "optimizer_impl": mode.optimizer_name(case.optimizer),
        "fp8_linears": fp8.describe(plan),
    }
    if missing:
        row.update(status="unsupported", error=unsupported_reason(case))
        return row, {}
    size = registry.size_of(case)
    try:
        work = step_work(workload, size, case.batch_size, case.device)
    except Exception as exc:  # a user's model that cannot run even to be counted: a row
        row.update(fault(exc))
        return row, {}
    matmul_tflops, linear_tflops = _matmul_ceilings(mode, plan, ceilings)
    row.update(
        floor_columns(
            work,
            matmul_tflops=matmul_tflops,
            linear_tflops=linear_tflops,
            scale_loss=mode.scale_loss,
            copy_gbps=ceilings["copy_gbps"],
            param_bytes=mode.param_bytes,
            shards=world.size if par.kind == "fsdp" else 1,
        )
    )
    row.update(cast_columns(work, mode, ceilings["copy_gbps"]))
    with mode.context(case.device):
        row.update(tf32_flags())  # as the step's phases set them
    reason = unsupported_reason(case) or parallel.unsupported_reason(
        case.parallel, variant=case.variant, world_size=world.size
    )
    if par.distributed and reason is None:
        comm = parallel.collective_bytes(work.num_params, case.parallel, mode)
        row.update(comm_floor_columns(comm, world.size, ceilings))
        row["floor_ms"] += row["comm_floor_ms"]
    if reason is not None:
        row.update(status="unsupported", error=reason)
        return row, {}
    samples: dict[str, list[float]] = {}
    s: TrainState | None = None
    prepared: variants.Prepared | None = None
    cuda = case.device == "cuda"
    # Memory still allocated before the case is built (by the caller, or left by an earlier case)
    # is not the case's: it is recorded, and taken out of the case's allocated peaks.
    residue = torch.cuda.memory_allocated() / memory.GIB if cuda else math.nan
    row["residue_gib"] = residue
    wrap = (
        functools.partial(
            parallel.wrap,
            parallel=case.parallel,
            group=world.data,
            device=case.device,
            blocks=lambda model: workload.blocks_of(model, size),
        )
        if par.distributed
        else None
    )
    try:
        s = build(case, capturable=variant.capture, wrap=wrap)
        # Memory first, in an eager pass of its own: it syncs between phases.
        row.update(memory.measure(s))
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        prepared = variants.prepare(s)
        row["prepare_s"] = prepared.prepare_s
        row["eager_parts"] = prepared.eager_parts
        graphs_before = prepared.compiled_graphs()
        windows = time_repeats(
            prepared.phases,
            warmup=case.warmup,
            steps=case.steps,
            repeats=case.repeats,
            clock=clock_for(case.device),
        )
        # The row's statistics are over every step of every window, one window after another;
        # `repeat_windows` splits them back, `case.steps` at a time.
        samples = {name: [ms for w in windows for ms in w[name]] for name in windows[0]}
        row["recompiled"] = prepared.compiled_graphs() != graphs_before
        if variant.name != "eager":
            # The eager pass's phase peaks say nothing of this variant: its own peak is the
            # highest allocation over compiling (or capturing) and the timed window.
            row.update(dict.fromkeys(PEAK_PHASE_COLUMNS, math.nan))
            if cuda:
                row["peak_alloc_gib"] = torch.cuda.max_memory_allocated() / memory.GIB
                row["peak_reserved_gib"] = torch.cuda.max_memory_reserved() / memory.GIB
        if cuda:
            for key in ("peak_alloc_gib", *PEAK_PHASE_COLUMNS):
                row[key] -= residue
        row.update(_derived(case, samples, row))
        # After the window: reading values back syncs, which is fine now.
        losses = prepared.losses
        loss_values = torch.stack(losses).float()
        row["final_loss"] = loss_values[-1].item()
        row["grad_scale"] = s.scaler.get_scale() if mode.scale_loss else None
        if not torch.isfinite(loss_values).all().item():
            n_bad = int((~torch.isfinite(loss_values)).sum().item())
            row["status"] = "nonfinite"
            row["error"] = f"{n_bad} of {len(losses)} losses were not finite"
        if row["recompiled"] and row["status"] == "ok":
            row["error"] = "recompiled during the timed window"
        if par.distributed:
            samples.update(_without_sync(s, prepared, row))
    except Exception as exc:  # a fault is recorded as a row; the suite goes on
        row.update(fault(exc))
    finally:
        s = prepared = None
        free_device_memory(compiled=variant.compile_mode is not None)
    return row, samples


def _without_sync(s: TrainState, prepared: variants.Prepared, row: dict) -> dict:
    """A second window of forward and backward with gradient synchronization off
    (`bench.execution.parallel.gradient_sync_off`): `comm_ms` is the forward-plus-backward median
    with it
    on less that with it off, the communication the step could not hide. The optimizer phase is
    left out of both (with FSDP it would find no gradient to step); gradients are dropped after
    each step, as the optimizer phase does. Its samples come back as `nosync_fwd`, ...."""
    case = s.case
    phases = {
        "fwd": prepared.phases["fwd"],
        "bwd": prepared.phases["bwd"],
        "zero": lambda: s.optimizer.zero_grad(set_to_none=True),
    }
    with parallel.gradient_sync_off(s.wrapper, case.parallel):
        nosync = time_phases(phases, warmup=1, steps=case.steps, clock=clock_for(case.device))
    synced = row["fwd_ms"] + row["bwd_ms"]
    unsynced = summarize(nosync["fwd"])["median"] + summarize(nosync["bwd"])["median"]
    row["nosync_fwd_bwd_ms"] = unsynced
    # The two windows' medians differ by noise too: communication that was all hidden reads as
    # a small negative difference, which is none.
    row["comm_ms"] = max(synced - unsynced, 0.0)
    return {f"nosync_{k}": v for k, v in nosync.items() if k != "total"}


def rederive(case: Case, row: Row, samples: dict[str, list[float]]) -> Row:
    """`row` with its statistics and the figures derived from them recomputed over `samples`:
    a case timed in several rounds (`bench.jobs.suite`) gets its row from its last round and
    its statistics from the windows of every round."""
    return {**row, **_derived(case, samples, row)}
