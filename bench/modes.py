"""Precision modes as data: each row of `MODES` owns its whole recipe.

A mode says how the model is prepared (nothing, or a cast of its parameters), which context each
phase of the step runs in (TF32 for float32 matmuls, and autocast around the forward pass), whether
the loss is scaled by `torch.amp.GradScaler`, and it builds the optimizer from `OPTIMIZERS`. The
one train step (`bench.step`) and every caller use only these methods: adding a mode is adding a
row, and nothing else branches on a mode's name.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import torch
from torch import nn

OPTIMIZERS: dict[str, Callable[..., torch.optim.Optimizer]] = {
    # PyTorch's default multi-tensor kernels. With GradScaler, scaler.step() reads found_inf on
    # the host before calling step(): a device sync that real training pays too.
    "foreach": lambda params, lr, capturable: torch.optim.Adam(
        params, lr=lr, foreach=True, capturable=capturable
    ),
    # One kernel per group of tensors; it takes GradScaler's scale and found_inf as tensors,
    # unscales and skips on the device, with no host sync. Its step counters live on the device
    # already, but a CUDA graph capture of step() still asks for capturable=True.
    "fused": lambda params, lr, capturable: torch.optim.Adam(
        params, lr=lr, fused=True, capturable=capturable
    ),
}
"""Adam implementations by name: `optimizer` axis of a case -> a factory (params, lr,
capturable). `capturable` keeps every piece of optimizer state on the device, as a CUDA graph
capture of the step needs."""


def dtype_name(dtype: torch.dtype | None) -> str:
    """`float16` for torch.float16; `none` for None (as rows and reports write dtypes)."""
    return str(dtype).removeprefix("torch.") if dtype is not None else "none"


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
    param_dtype: torch.dtype | None = None
    """Cast the model's parameters (and so their gradients and Adam's state) to this dtype before
    the optimizer is built; None keeps float32 parameters."""

    @property
    def matmul_dtype(self) -> str:
        """Which measured matmul ceiling bounds this mode's matmuls: fp32, tf32, fp16 or bf16."""
        low = self.autocast_dtype or self.param_dtype
        if low is not None and low != torch.float32:
            return {torch.float16: "fp16", torch.bfloat16: "bf16"}[low]
        return "tf32" if self.tf32 else "fp32"

    def prepare(self, model: nn.Module) -> nn.Module:
        """The model as this mode trains it (in place, before the optimizer sees it)."""
        if self.param_dtype is not None:
            model.to(self.param_dtype)
        return model

    def optimizer(
        self, name: str, params: Iterable[nn.Parameter], lr: float, *, capturable: bool = False
    ) -> torch.optim.Optimizer:
        return OPTIMIZERS[name](params, lr, capturable)

    def scaler(self, device: str) -> torch.amp.GradScaler:
        """GradScaler, enabled only when the mode scales the loss (otherwise scale() returns the
        loss and step() calls optimizer.step() unchanged)."""
        return torch.amp.GradScaler(device, enabled=self.scale_loss)

    @contextlib.contextmanager
    def context(self, device: str, *, forward: bool = False, cache: bool = True) -> Iterator[None]:
        """The precision context of one phase of the step: TF32 as the mode wants it, and, for the
        forward pass only, autocast. Autocast wraps the forward and the loss alone, as its
        docstring asks: backward ops then run in the dtype autocast chose for the forward ops.
        `cache=False` turns off autocast's cache of weight casts, as a CUDA graph capture needs
        (PyTorch's CUDA graph notes)."""
        dtype = self.autocast_dtype
        with (
            tf32_enabled(self.tf32),
            torch.autocast(
                device,
                dtype=dtype or torch.float32,
                enabled=forward and dtype is not None,
                cache_enabled=cache,
            ),
        ):
            yield


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
    """Set both TF32 switches for the duration of a region and restore them afterwards.

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
