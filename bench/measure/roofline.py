"""Counted work per step and the time floor it implies on the measured ceilings: matmul FLOPs
over the matmul rate of their dtype, the optimizer's bytes over the copy bandwidth
(`pct_of_floor`). A ceiling not measured (NaN) gives no floor, never a floor of zero."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from torch import nn

from bench.measure import flops
from bench.store.run_env import Ceilings
from bench.workloads.base import size_key

if TYPE_CHECKING:
    from bench.modes.mode import Mode
    from bench.workloads.base import Workload

ADAM_WORDS_PER_PARAM = 7
"""Adam reads param, grad, exp_avg, exp_avg_sq and writes param, exp_avg, exp_avg_sq: seven words
per parameter, the fewest any implementation can move; a word is the parameters' dtype (float32,
or bf16 for the pure-bf16 modes, whose Adam moves half the bytes)."""
_AUTOCAST_CAST = (nn.Linear, nn.modules.conv._ConvNd)
"""Modules whose parameters autocast casts to its low dtype on every forward: linear and
convolutions are on its lower-precision list. Embeddings and norms run on their float32
parameters as they are."""


@dataclass(frozen=True)
class Work:
    """The counted work of one train step of a model at one batch size (one rank's batch)."""

    fwd_flop_by_module: Mapping[str, int]
    """Module name (as `named_modules()` spells it) -> the forward FLOPs of its own ops
    (`bench.measure.flops.count`); a Linear's entry is its one matmul."""
    bwd_flop_by_module: Mapping[str, int]
    """The same for the backward (input and weight gradients)."""
    num_params: int
    """Parameters of the model: Adam steps each, DDP and FSDP2 reduce each gradient."""
    cast_params: int
    """Parameters autocast casts on every forward (those of Linears and convolutions)."""
    input_float_elements: int
    """Floating-point elements of the batch's inputs (0 for token ids), which autocast casts."""

    @property
    def fwd_flop(self) -> int:
        return sum(self.fwd_flop_by_module.values())

    @property
    def bwd_flop(self) -> int:
        return sum(self.bwd_flop_by_module.values())


def step_work(workload: Workload, size: object, batch_size: int, device: str = "cpu") -> Work:
    """The counted work of one step of `workload` at `size` and `batch_size`, cached per
    (model name, size, batch size): a grid's cases of one model and batch size count once.
    `device` is where to count a model that cannot be counted on the meta device (`_count`)."""
    key = (workload.name, size_key(size), batch_size)
    if key not in _WORK:
        _WORK[key] = _count(workload, size, batch_size, device)
    return _WORK[key]


_WORK: dict[tuple[str, object, int], Work] = {}


def _count(workload: Workload, size: object, batch_size: int, device: str) -> Work:
    """Count on the meta device, where a model has shapes and no storage, so counting costs no
    memory and little time at any size (the MLP, the GPT and most zoo models build and run
    there). A model that cannot (an op without a meta kernel, a batch drawn from a generator, a
    value read back with `.item()`, as transformers' BART masks do) is counted on `device`
    instead, the case's own, at the full batch: that costs a step's memory and time, once per
    (model, size, batch size), and gives the same counts."""
    try:
        return _count_on("meta", workload, size, batch_size)
    except (RuntimeError, NotImplementedError, TypeError, ValueError):
        return _count_on(device, workload, size, batch_size)


def _count_on(device: str, workload: Workload, size: object, batch_size: int) -> Work:
    model = workload.build(size, device, 0)
    batch = workload.make_batch(size, batch_size, device, 0)
    counted = flops.count(model, batch, lambda out, y: workload.loss(out, y, "mean"))
    inputs = batch[0]
    return Work(
        fwd_flop_by_module=counted["fwd_flop_by_module"],
        bwd_flop_by_module=counted["bwd_flop_by_module"],
        num_params=sum(p.numel() for p in model.parameters()),
        cast_params=sum(
            p.numel()
            for m in model.modules()
            if isinstance(m, _AUTOCAST_CAST)
            for p in m.parameters(recurse=False)
        ),
        input_float_elements=inputs.numel() if inputs.is_floating_point() else 0,
    )


def num_params(workload: Workload, size: object) -> int:
    """Parameters of `workload`'s model at `size`, counted on its meta model."""
    return step_work(workload, size, 1).num_params


def optimizer_bytes(num_params: int, scale_loss: bool, param_bytes: int = 4) -> float:
    """Adam's bytes per step over `num_params` parameters of `param_bytes` bytes (the scaler's
    inf check reads the gradients, whose dtype is the parameters')."""
    per_param = ADAM_WORDS_PER_PARAM * param_bytes + (param_bytes if scale_loss else 0)
    return float(num_params * per_param)


def floor_columns(
    work: Work,
    *,
    scale_loss: bool,
    matmul_tflops: float,
    linear_tflops: Mapping[str, float] | None = None,
    copy_gbps: float,
    param_bytes: int = 4,
    shards: int = 1,
) -> dict[str, float]:
    """Flat row columns: counted work and the floor of each phase and of the step, in ms.

    Every matmul runs at `matmul_tflops` except the modules of `linear_tflops` (module name ->
    ceiling): a float8 mode runs the Linears it converted at the float8 ceiling, and every
    other FLOP (the other Linears, attention's matmuls) at its unconverted dtype's.
    `shards`: the ranks the optimizer state is split over (FSDP), each stepping its part."""
    rates = linear_tflops or {}

    def floor_ms(by_module: Mapping[str, int]) -> float:
        return sum(
            _ms(flop, rates.get(name, matmul_tflops) * 1e12) for name, flop in by_module.items()
        )

    opt_bytes = optimizer_bytes(work.num_params, scale_loss, param_bytes) / shards
    fwd_floor = floor_ms(work.fwd_flop_by_module)
    bwd_floor = floor_ms(work.bwd_flop_by_module)
    step_floor = _ms(opt_bytes, copy_gbps * 1e9)
    return {
        "fwd_gflop": work.fwd_flop / 1e9,
        "bwd_gflop": work.bwd_flop / 1e9,
        "step_gbytes": opt_bytes / 1e9,
        "fwd_floor_ms": fwd_floor,
        "bwd_floor_ms": bwd_floor,
        "step_floor_ms": step_floor,
        "floor_ms": fwd_floor + bwd_floor + step_floor,
    }


def _ms(work: float, rate_per_s: float) -> float:
    """The time `work` takes at `rate_per_s`, in ms; NaN when the rate is not a measured,
    positive one."""
    return work / rate_per_s * 1e3 if 0 < rate_per_s < math.inf else math.nan


BUS_FACTORS = {
    # nccl-tests' bus bandwidth: the bytes each rank's link carries per byte of the buffer.
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
}


def comm_floor_columns(
    collective_bytes: dict[str, float], world_size: int, ceilings: Ceilings
) -> dict[str, float]:
    """The time the step's collectives need at the measured bus bandwidth, added to the floor
    of a distributed row: for each collective, its bus bytes (buffer bytes × the nccl-tests
    factor) over the bus bandwidth measured in the run at this model's gradient size. It counts
    the collectives as if nothing overlapped them (a floor, not a prediction); a step that hides
    them behind compute can come under it (its `pct_of_floor` then exceeds 100)."""
    total_ms = 0.0
    gbytes = 0.0
    for name, nbytes in collective_bytes.items():
        if not nbytes:
            continue
        bus = nbytes * BUS_FACTORS[name](world_size)
        gbytes += bus / 1e9
        total_ms += bus / (ceilings.busbw(name) * 1e9) * 1e3
    return {"comm_gbytes": gbytes, "comm_floor_ms": total_ms}


def cast_columns(work: Work, mode: Mode, copy_gbps: float) -> dict[str, float]:
    """Bytes the autocast casts move per step, which the floor does not count, and their time at
    the copy bandwidth: they explain part of the distance between a step and its floor.

    With float32 parameters under autocast, each weight and bias of a Linear or convolution is
    cast to the low-precision dtype once per forward (read 4 bytes, write 2), each of their
    gradients leaves its matmul in that dtype and is cast back to float32 for `param.grad` (read
    2, write 4), and a float32 input batch is cast once (read 4, write 2; token ids are not
    cast). Modes without autocast, or with low-precision parameters, cast nothing."""
    casts = mode.autocast_dtype is not None and mode.param_dtype is None
    params = work.cast_params * 12 if casts else 0
    inputs = work.input_float_elements * 6 if casts else 0
    total = float(params + inputs)
    return {"cast_gbytes": total / 1e9, "cast_ms_at_copy_bw": total / (copy_gbps * 1e9) * 1e3}
