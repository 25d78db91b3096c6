"""The per-element half of the GradScaler check: of a gradient's elements that fp32 has as
non-zero, the share small enough that float16 flushes them to zero or leaves them subnormal,
without the scaler and with it. Adam updates each element on its own, so an element lost to
underflow is lost whatever share of the norm it carried; the norm share beside it says how much
of the gradient's direction went with it."""

from __future__ import annotations

import torch

TINY = torch.finfo(torch.float16).tiny
"""float16's smallest normal number (2**-14): below it a value is subnormal or flushes to zero."""


def _share(mask: torch.Tensor, live: torch.Tensor) -> float:
    count = int(live.sum())
    return float((mask & live).sum()) / count if count else float("nan")


def element_shares(reference: torch.Tensor, scale: float) -> dict[str, float]:
    """`flushed_unscaled` and `flushed_scaled`: the share of `reference`'s (fp32's gradient's)
    non-zero elements below float16's smallest normal, so that float16 holding them flushes them
    or makes them subnormal, without the scaler and with the loss scaled by `scale`. Read off
    fp32's values: a tensor whose gradient autocast keeps in float32 would not lose them, which
    the norm share beside it (measured on float16's own gradient) shows."""
    live = reference != 0
    magnitude = reference.abs()
    return {
        "flushed_unscaled": _share(magnitude < TINY, live),
        "flushed_scaled": _share(magnitude * scale < TINY, live),
    }
