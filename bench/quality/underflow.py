"""The per-element half of the GradScaler check: of fp32's non-zero gradient elements, the share
float16 flushes to zero and the share it keeps as subnormals, without and with the scale."""

from __future__ import annotations

import torch

from bench.numerics.measure.underflow import fp16_cast_shares


def element_shares(reference: torch.Tensor, scale: float) -> dict[str, float]:
    """`zero_unscaled` / `zero_scaled`: the share of `reference`'s (fp32's gradient's) non-zero
    elements that float16 rounds to zero, without the scaler and with the loss multiplied by
    `scale`; `subnormal_unscaled` / `subnormal_scaled`: the share it keeps as subnormals. Read off
    fp32's values: a tensor whose gradient autocast keeps in float32 would not lose them, which
    the norm share beside it (measured on float16's own gradient) shows."""
    bare, scaled = fp16_cast_shares(reference), fp16_cast_shares(reference, scale)
    return {
        "zero_unscaled": bare["zero"],
        "zero_scaled": scaled["zero"],
        "subnormal_unscaled": bare["subnormal"],
        "subnormal_scaled": scaled["subnormal"],
    }
