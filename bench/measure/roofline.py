"""Counted work per step and the time floor it implies on the measured ceilings.

The floor of a phase is its counted work over the measured rate of the unit that does it: matmul
FLOPs over the matmul ceiling of the dtype the mode's matmuls run in, and the optimizer's bytes over
the measured copy bandwidth. No version of the step can run much faster; `pct_of_floor` says how
close a measured step comes. Elementwise work (ReLU, casts, bias gradients, the loss) is not
counted: it is small beside the matmuls, and leaving it out keeps the floor a lower bound.
A ceiling that was not measured (NaN: a CPU's matmul rate, a float8 rate on a GPU without float8)
gives no floor (NaN, shown `–`), never a floor of zero or a division by zero.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from bench.workloads.mlp import ModelSize

if TYPE_CHECKING:
    from bench.recipes.modes import Mode

ADAM_WORDS_PER_PARAM = 7
"""Adam reads param, grad, exp_avg, exp_avg_sq and writes param, exp_avg, exp_avg_sq: seven words
per parameter, the fewest any implementation can move; a word is the parameters' dtype (float32,
or bf16 for the pure-bf16 recipes, whose Adam moves half the bytes)."""
ADAM_BYTES_PER_PARAM = ADAM_WORDS_PER_PARAM * 4
"""Seven float32 words: Adam over float32 parameters."""

SCALER_BYTES_PER_PARAM = 4
"""With loss scaling every gradient must also be read once to look for inf/NaN before the step may
be taken (fused Adam does that inside its kernel; foreach Adam in a pass of its own)."""


def num_params(size: ModelSize) -> int:
    return sum(i * o + o for i, o in size.linears())


def matmul_flops_per_linear(size: ModelSize, batch_size: int) -> list[dict[str, float]]:
    """Matmul FLOPs of one step per Linear (fc1, fc2, fc3) and phase.

    Forward: 2*B*in*out per Linear. Backward: the input gradient and the weight gradient, 2*B*in*out
    each, except fc1's input gradient, which nothing needs (the data does not require grad).
    """
    out = []
    for n, (i, o) in enumerate(size.linears()):
        fwd = 2.0 * batch_size * i * o
        out.append({"fwd": fwd, "bwd": fwd if n == 0 else 2.0 * fwd})
    return out


def matmul_flops(size: ModelSize, batch_size: int) -> dict[str, float]:
    """Matmul FLOPs of one step, per phase: {"fwd": ..., "bwd": ...}."""
    per_linear = matmul_flops_per_linear(size, batch_size)
    return {phase: sum(f[phase] for f in per_linear) for phase in ("fwd", "bwd")}


def optimizer_bytes(size: ModelSize, scale_loss: bool, param_bytes: int = 4) -> float:
    """Adam's bytes per step over parameters of `param_bytes` bytes (the scaler's inf check reads
    the gradients, whose dtype is the parameters')."""
    per_param = ADAM_WORDS_PER_PARAM * param_bytes + (param_bytes if scale_loss else 0)
    return float(num_params(size) * per_param)


def floor_columns(
    size: ModelSize,
    batch_size: int,
    *,
    scale_loss: bool,
    matmul_tflops: float | Sequence[float],
    copy_gbps: float,
    param_bytes: int = 4,
    shards: int = 1,
) -> dict[str, float]:
    """Flat row columns: counted work and the floor of each phase and of the step, in ms.

    `matmul_tflops` is one ceiling for every matmul, or one per Linear (fc1, fc2, fc3): a float8
    recipe runs the Linears it converted at the float8 ceiling and the others at bf16's.
    `shards`: the ranks the optimizer state is split over (FSDP), each stepping its part."""
    per_linear = matmul_flops_per_linear(size, batch_size)
    rates = (
        [float(matmul_tflops)] * len(per_linear)
        if isinstance(matmul_tflops, (int, float))
        else list(matmul_tflops)
    )
    flops = matmul_flops(size, batch_size)
    opt_bytes = optimizer_bytes(size, scale_loss, param_bytes) / shards
    fwd_floor = sum(_ms(f["fwd"], r * 1e12) for f, r in zip(per_linear, rates, strict=True))
    bwd_floor = sum(_ms(f["bwd"], r * 1e12) for f, r in zip(per_linear, rates, strict=True))
    step_floor = _ms(opt_bytes, copy_gbps * 1e9)
    return {
        "fwd_gflop": flops["fwd"] / 1e9,
        "bwd_gflop": flops["bwd"] / 1e9,
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
    collective_bytes: dict[str, float], world_size: int, ceilings: dict[str, float]
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
        total_ms += bus / (ceilings[f"{name}_busbw_gbps"] * 1e9) * 1e3
    return {"comm_gbytes": gbytes, "comm_floor_ms": total_ms}


def cast_columns(
    size: ModelSize, batch_size: int, mode: Mode, copy_gbps: float
) -> dict[str, float]:
    """Bytes the autocast casts move per step, which the floor does not count, and their time at
    the copy bandwidth: they explain part of the distance between a step and its floor.

    With float32 parameters under autocast, each weight and bias is cast to the low-precision
    dtype once per forward (read 4 bytes, write 2), each gradient leaves its matmul in that dtype
    and is cast back to float32 for `param.grad` (read 2, write 4), and the float32 input batch is
    cast once (read 4, write 2). Modes without autocast, or with low-precision parameters, cast
    nothing."""
    casts = mode.autocast_dtype is not None and mode.param_dtype is None
    params = num_params(size) * 12 if casts else 0
    inputs = batch_size * size.input_size * 6 if casts else 0
    total = float(params + inputs)
    return {"cast_gbytes": total / 1e9, "cast_ms_at_copy_bw": total / (copy_gbps * 1e9) * 1e3}
