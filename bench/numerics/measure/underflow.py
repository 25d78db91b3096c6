"""Gradient underflow against an fp32 reference (`census`: shares flushed, subnormal, non-finite,
relative error, and the norm share that decides GradScaler, `norm_share`), and the log2 histogram
of Micikevicius et al. (docs/quality.md states the definitions)."""

from __future__ import annotations

import math

import torch

from bench.numerics.measure import fp16


def norm_share(ref: torch.Tensor, lost: torch.Tensor) -> float:
    """||ref[lost]||_2 / ||ref||_2 in float64 (NaN where ref is all zero)."""
    ref64 = ref.double()
    whole = torch.linalg.vector_norm(ref64).item()
    return torch.linalg.vector_norm(ref64[lost]).item() / whole if whole > 0 else math.nan


def fp16_cast_shares(values: torch.Tensor, scale: float = 1.0) -> dict[str, float]:
    """What float16 would do to `values * scale` by the rounding rule (`fp16`), as shares of its
    non-zero elements: `zero` (flushed), `subnormal` (kept), `zero_norm` (the flushed norm)."""
    v = values.detach().float()
    live = v != 0
    magnitude = v.abs() * scale
    zero = live & (magnitude <= fp16.ZERO_AT_OR_BELOW)
    subnormal = (magnitude > fp16.ZERO_AT_OR_BELOW) & (magnitude < fp16.SUBNORMAL_BELOW)
    count = int(live.sum())
    return {
        "zero": int(zero.sum()) / count if count else math.nan,
        "subnormal": int(subnormal.sum()) / count if count else math.nan,
        "zero_norm": norm_share(v, zero),
    }


def census(g: torch.Tensor, ref: torch.Tensor, scale: float = 1.0) -> dict[str, float]:
    """The shares above for gradient `g`, taken with the loss multiplied by `scale`."""
    n = g.numel()
    flushed = (g == 0) & (ref != 0)
    tiny = torch.finfo(g.dtype).tiny
    ref64, g64 = ref.double(), g.double() / scale
    ref_norm = torch.linalg.vector_norm(ref64).item()
    err = torch.linalg.vector_norm(g64 - ref64).item()
    return {
        "numel": n,
        "flushed": flushed.sum().item() / n,
        "flushed_norm": norm_share(ref, flushed),
        "subnormal": ((g != 0) & (g.abs() < tiny)).sum().item() / n,
        "nonfinite": (~torch.isfinite(g)).sum().item() / n,
        "ref_zero": (ref == 0).sum().item() / n,
        "rel_err": err / ref_norm if ref_norm > 0 else math.nan,
    }


def fp16_fate(values: torch.Tensor, scale: float = 1.0) -> dict[str, float]:
    """What the float16 cast of `values * scale` does: shares flushed, subnormal, infinite."""
    v = values.float()
    nonzero = v != 0
    h = (v * scale).half()
    n = v.numel()
    return {
        "fp16_flushed": (nonzero & (h == 0)).sum().item() / n,
        "fp16_subnormal": ((h != 0) & (h.abs() < 2.0**fp16.SMALLEST_NORMAL_LOG2)).sum().item() / n,
        "fp16_overflow": torch.isinf(h).sum().item() / n,
    }


def log2_histogram(values: torch.Tensor) -> list[dict[str, float]]:
    """Rows {bin, log2_lo, count, share} of |v| in bins [2**e, 2**(e+1)), after `zero`."""
    v = values.detach().float().flatten()
    n = v.numel()
    nonzero = v[v != 0].abs()
    rows = [
        {
            "bin": "zero",
            "log2_lo": math.nan,
            "count": n - nonzero.numel(),
            "share": (n - nonzero.numel()) / n,
        }
    ]
    if nonzero.numel():
        e = torch.floor(torch.log2(nonzero)).to(torch.int64)
        lo = int(e.min().item())
        counts = torch.bincount(e - lo)
        for i, c in enumerate(counts.tolist()):
            if c:
                rows.append({"bin": str(lo + i), "log2_lo": lo + i, "count": c, "share": c / n})
    return rows
