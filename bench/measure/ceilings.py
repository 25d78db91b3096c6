"""The device's own ceilings, measured at the start of every run (no table of datasheet peaks):
the dense matmul rate per dtype (float8's `_scaled_mm` where the GPU has it), copy bandwidth,
and on several ranks the collectives' bus bandwidth (`measure_collectives`)."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

import torch
import torch.distributed as dist

from bench.execution.distributed import World
from bench.faults import error_summary
from bench.measure.roofline import BUS_FACTORS, num_params
from bench.measure.stats import summarize
from bench.measure.timing import clock_for, time_phases
from bench.modes import fp8
from bench.modes.mode import tf32_enabled
from bench.store.run_env import Ceilings

if TYPE_CHECKING:
    from bench.workloads.base import Workload

MATMUL_DTYPES: dict[str, tuple[torch.dtype, bool]] = {
    "fp32": (torch.float32, False),
    "tf32": (torch.float32, True),
    "fp16": (torch.float16, False),
    "bf16": (torch.bfloat16, False),
}
"""Ceiling name -> (operand dtype, TF32 allowed)."""
MATMUL_DEVICES = ("cuda",)
"""Devices whose matmul ceilings are measured. A GPU's GEMM rate is a property of the chip that
the model's large matmuls approach; a CPU's depends on the shape, the instruction set and what
else the cores run, so a floor made from it can sit above the step it bounds. The CPU gets no
matmul floor (its rows show `–`); the copy bandwidth, which bounds the optimizer phase, is
measured everywhere."""


def _median_ms(fn: Callable[[], object], device: str, warmup: int, steps: int) -> float:
    samples = time_phases({"op": fn}, warmup=warmup, steps=steps, clock=clock_for(device))
    return summarize(samples["op"])["median"]


def measure(
    device: str, *, matmul_n: int, copy_mib: int, warmup: int = 3, steps: int = 10
) -> Ceilings:
    """The matmul rate per dtype (on a device of `MATMUL_DEVICES`), the copy bandwidth, and the
    sizes used."""
    matmul: dict[str, float] = {}
    gen = torch.Generator(device=device).manual_seed(1234)
    for name, (dtype, tf32) in MATMUL_DTYPES.items() if device in MATMUL_DEVICES else ():
        a = torch.randn(matmul_n, matmul_n, generator=gen, device=device).to(dtype)
        b = torch.randn(matmul_n, matmul_n, generator=gen, device=device).to(dtype)
        with tf32_enabled(tf32):
            ms = _median_ms(lambda a=a, b=b: a @ b, device, warmup, steps)
        matmul[name] = 2.0 * matmul_n**3 / (ms * 1e-3) / 1e12
        del a, b
    if fp8.gpu_unsupported_reason(device) is None:
        for granularity in fp8.GRANULARITIES:
            matmul[f"fp8-{granularity}"] = _fp8_tflops(
                granularity, device, matmul_n, gen, warmup, steps
            )
    src = torch.randn(copy_mib * 2**20 // 4, generator=gen, device=device)
    dst = torch.empty_like(src)
    ms = _median_ms(lambda: dst.copy_(src), device, warmup, steps)
    copy_gbps = 2.0 * src.numel() * 4 / (ms * 1e-3) / 1e9
    return Ceilings(matmul_n, copy_mib, copy_gbps, matmul_tflops=matmul)


def _fp8_tflops(
    granularity: str, device: str, n: int, gen: torch.Generator, warmup: int, steps: int
) -> float:
    try:
        a, b, sa, sb = fp8.scaled_mm_operands(n, granularity, device, gen)
        ms = _median_ms(lambda: fp8.scaled_mm(a, b, sa, sb), device, warmup, steps)
    except Exception as exc:  # an fp8 ceiling that cannot be measured must not end the run
        print(
            f"ampbench: fp8-{granularity} ceiling not measured: {error_summary(exc)}",
            file=sys.stderr,
            flush=True,
        )
        return math.nan
    return 2.0 * n**3 / (ms * 1e-3) / 1e12


COLLECTIVES = ("all_reduce", "reduce_scatter", "all_gather")


def measure_collectives(
    world: World, workload: Workload, size: object, *, warmup: int = 2, steps: int = 5
) -> dict[str, float]:
    """Bus bandwidth of all-reduce, reduce-scatter and all-gather over the run's data group, on
    a float32 buffer of the size of `workload`'s gradients at `size` (its parameter count,
    counted on its meta model: what DDP all-reduces), as nccl-tests reports it: algbw is
    the buffer's bytes over the time, busbw is algbw × 2(n-1)/n for all-reduce and × (n-1)/n for
    reduce-scatter and all-gather. A collective is as slow as its slowest rank: each rank times
    its own, the slowest median is kept. The first calls (warm-up) set up the communicator.

    Returns {"<collective>_busbw_gbps": ..., "collective_mib": ...} (`Ceilings.record`'s keys);
    nothing in a one-rank run."""
    if not world.distributed:
        return {}
    n = world.size
    # One float32 word per parameter, divisible by the world size, as RS and AG need.
    numel = max(n, num_params(workload, size) // n * n)
    full = torch.randn(numel, device=world.device)
    shard = torch.empty(numel // n, device=world.device)
    group = world.data
    runs = {
        "all_reduce": lambda: dist.all_reduce(full, group=group),
        "reduce_scatter": lambda: dist.reduce_scatter_tensor(shard, full, group=group),
        "all_gather": lambda: dist.all_gather_into_tensor(full, shard, group=group),
    }
    # Synchronous collectives: on NCCL the current stream waits for each one, so the clock's
    # events bracket it; on gloo the call returns when it is done.
    mine = {name: _median_ms(run, world.device, warmup, steps) for name, run in runs.items()}
    slowest = {
        name: max(ms[name] for ms in world.exchange(mine, "the collective ceilings"))
        for name in COLLECTIVES
    }
    out: dict[str, float] = {"collective_mib": numel * 4 / 2**20}
    for name, ms in slowest.items():
        algbw = numel * 4 / (ms * 1e-3) / 1e9
        out[f"{name}_busbw_gbps"] = algbw * BUS_FACTORS[name](n)
    return out
