"""The underflow census on a user's real gradients: per tensor, the share of its elements and of
its norm that float16 would flush to zero without a loss scale.

It runs in the optimizer's step pre-hook, where GradScaler has already unscaled the gradients
(`scaler.step` unscales before it calls `optimizer.step`), so each `param.grad` is the true
gradient. The element share is `bench.numerics.measure.underflow.fp16_fate`'s, by the cast itself;
the norm share is `bench.numerics.measure.underflow.norm_share` of those flushed elements (the one
definition: their norm over the tensor's, not squared), and subnormals, kept at reduced precision,
count apart. It reads values back to
the host (`.item()`), so it synchronizes: the probe times it on its own (`census_ms`) and leaves
the step it ran in out of the step-time samples.
"""

from __future__ import annotations

import time

import torch
from torch import nn

from bench.numerics.measure.underflow import fp16_fate, norm_share


def take(model: nn.Module, step: int) -> tuple[list[dict[str, object]], float]:
    """One row per parameter with a gradient, and the census's wall time in ms (device work
    included: it synchronizes before and after)."""
    cuda = any(p.is_cuda for p in model.parameters())
    if cuda:
        torch.cuda.synchronize()
    start = time.perf_counter()
    rows = []
    for name, p in model.named_parameters():
        if p.grad is None:
            continue
        g = p.grad.detach().float()
        fate = fp16_fate(g)
        live = g != 0
        flushed = live & (g.half() == 0)
        lost = norm_share(g, flushed)
        rows.append(
            {
                "step": step,
                "tensor": name,
                "numel": g.numel(),
                "flushed_share": fate["fp16_flushed"],
                "flushed_norm_share": lost,
                "subnormal_share": fate["fp16_subnormal"],
                "overflow_share": fate["fp16_overflow"],
                "nonfinite": bool(not torch.isfinite(g).all()),
            }
        )
    if cuda:
        torch.cuda.synchronize()
    return rows, (time.perf_counter() - start) * 1e3
