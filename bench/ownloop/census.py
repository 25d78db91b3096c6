"""The underflow census on a user's real gradients: per tensor, the share of its elements and of
its norm that float16 would flush to zero without a loss scale. It runs in the optimizer's step
pre-hook, after GradScaler's unscale, and synchronizes (`.item()`): the probe times it apart."""

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
