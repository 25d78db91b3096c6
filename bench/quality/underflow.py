"""The per-element half of the GradScaler check: of the elements of fp32's gradient that are not
zero, the share float16 would flush to ZERO (lost) and the share it would keep as a subnormal
(kept, at reduced precision: not harm), without the scaler and with the loss scaled, by float16's
rounding rule (`bench.numerics.measure.fp16`). The check's decisive figure is the share of the
gradient's norm that flushes (`lost_unscaled`, `kept_by_scaler`, measured on float16's own
gradient, as `bench.numerics.measure.underflow.norm_share` defines it); these counts sit beside
it as what the elements went through."""

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
