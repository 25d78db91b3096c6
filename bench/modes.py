"""Precision modes as data: one row per mode, read by the single train step in `bench.step`.

A mode says which dtype autocast runs the forward pass in (or none), whether the loss is scaled by
`torch.amp.GradScaler`, and whether float32 matmuls may use TF32 tensor cores. Adding a mode is
adding a row to `MODES`; nothing else branches on the mode's name.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

import torch


@dataclass(frozen=True, kw_only=True)
class Mode:
    name: str
    """The name used on the command line and in every row."""
    autocast_dtype: torch.dtype | None
    """dtype autocast runs its low-precision ops in; None leaves autocast off."""
    scale_loss: bool
    """Multiply the loss by GradScaler's scale before backward (float16 needs this to keep small
    gradients above its smallest subnormal, 2**-24)."""
    tf32: bool
    """Allow TF32 for float32 matmuls and cuDNN convolutions (10-bit mantissa products)."""

    @property
    def matmul_dtype(self) -> str:
        """Which measured matmul ceiling bounds this mode's matmuls: fp32, tf32, fp16 or bf16."""
        if self.autocast_dtype is not None:
            return {torch.float16: "fp16", torch.bfloat16: "bf16"}[self.autocast_dtype]
        return "tf32" if self.tf32 else "fp32"


MODES: dict[str, Mode] = {
    m.name: m
    for m in (
        # Strict IEEE float32: PyTorch's default for matmuls.
        Mode(name="fp32", autocast_dtype=None, scale_loss=False, tf32=False),
        Mode(name="tf32", autocast_dtype=None, scale_loss=False, tf32=True),
        Mode(name="fp16-amp", autocast_dtype=torch.float16, scale_loss=True, tf32=False),
        # The configuration the original question asks about: is the scaler needed at all?
        Mode(name="fp16-amp-noscale", autocast_dtype=torch.float16, scale_loss=False, tf32=False),
        # bfloat16 has float32's exponent range, so it is run without a scaler (see AMP-FACTS.md).
        Mode(name="bf16-amp", autocast_dtype=torch.bfloat16, scale_loss=False, tf32=False),
    )
}


def tf32_flags() -> dict[str, bool]:
    """The TF32 switches in force right now, as recorded in every row."""
    return {
        "tf32_matmul": bool(torch.backends.cuda.matmul.allow_tf32),
        "tf32_cudnn": bool(torch.backends.cudnn.allow_tf32),
    }


@contextlib.contextmanager
def tf32_enabled(enabled: bool) -> Iterator[None]:
    """Set both TF32 switches for the duration of a case and restore them afterwards.

    The legacy `allow_tf32` flags are used for both setting and reading: newer torch versions
    refuse to mix them with the `fp32_precision` API in one process.
    """
    matmul, cudnn = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = enabled
    torch.backends.cudnn.allow_tf32 = enabled
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = matmul
        torch.backends.cudnn.allow_tf32 = cudnn
