"""The torch side of a precision mode: `Mode` (from its card, `of_card(card)`, or `MODES` by name)
owns the whole mode: the model's preparation, each phase's context, the loss scaler, the
optimizer, and why it cannot run here."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import nn

from bench.ground.catalog import CARDS, ModeCard
from bench.ground.optimizers import OPTIMIZERS
from bench.modes import fp8

if TYPE_CHECKING:
    from bench.workloads.base import Workload


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
    the optimizer is built; None keeps float32 parameters. The input batch is cast to it too (no
    autocast does it)."""
    stochastic_round: bool = False
    """Adam's update rounded stochastically into the (bf16) parameters: torchao's `_AdamW` with
    `bf16_stochastic_round=True` replaces the case's Adam. Rounding to nearest drops every update
    below half an ulp of its weight; stochastic rounding keeps it in expectation."""
    fp8_scaling: str | None = None
    """torchao's float8 scaling (`tensorwise`, `rowwise`) for the Linears that
    `bench.modes.fp8.plan` chooses; None: no float8."""
    card: ModeCard | None = None
    """What the mode is, as data without torch (`bench.ground.catalog`): its kind, words,
    colour and roles. None for a mode made outside the table (tests)."""

    @property
    def matmul_dtype(self) -> str:
        """Which measured matmul ceiling bounds this mode's matmuls: fp32, tf32, fp16, bf16, or
        fp8-tensorwise / fp8-rowwise (for the Linears converted to float8; the others run at
        the autocast dtype's)."""
        if self.fp8_scaling is not None:
            return f"fp8-{self.fp8_scaling}"
        return self.unconverted_matmul_dtype

    @property
    def unconverted_matmul_dtype(self) -> str:
        """The ceiling of the matmuls that are not float8."""
        low = self.autocast_dtype or self.param_dtype
        if low is not None and low != torch.float32:
            return {torch.float16: "fp16", torch.bfloat16: "bf16"}[low]
        return "tf32" if self.tf32 else "fp32"

    @property
    def param_bytes(self) -> int:
        """Bytes per element of the parameters, their gradients and Adam's moments."""
        return (self.param_dtype or torch.float32).itemsize

    def fp8_plan(self, workload: Workload, size: object) -> dict[str, str]:
        """Per Linear of `workload` at `size`: `converted` to float8, or `kept: <why>`; empty
        without a float8 mode."""
        if self.fp8_scaling is None:
            return {}
        return fp8.plan(workload, size, self.fp8_scaling)

    def unsupported_reason(self, device: str) -> str | None:
        """Why this mode cannot run on `device` here (torchao missing, no float8 GPU)."""
        return fp8.mode_unsupported_reason(
            device=device, torchao=self.stochastic_round, fp8=self.fp8_scaling is not None
        )

    def optimizer_name(self, name: str) -> str:
        """The Adam a case of this mode with optimizer axis `name` actually runs."""
        return "torchao _AdamW (bf16 stochastic rounding)" if self.stochastic_round else name

    def prepare(
        self, model: nn.Module, workload: Workload | None = None, size: object | None = None
    ) -> nn.Module:
        """The model as this mode trains it (in place, before the optimizer sees it). The
        workload and its `size` are needed by a float8 mode, to choose its Linears (a size
        may be None: a user's model of one preset has no size object)."""
        if self.param_dtype is not None:
            model.to(self.param_dtype)
        if self.fp8_scaling is not None:
            if workload is None:
                raise ValueError(f"mode {self.name!r} needs the workload to convert its model")
            model = fp8.convert(model, workload, size, self.fp8_scaling)
        return model

    def cast_input(self, x: torch.Tensor) -> torch.Tensor:
        """The input batch in the dtype of the parameters, when no autocast casts it. Only a
        floating-point input is cast: token ids stay integers (an embedding looks them up)."""
        if self.param_dtype is None or not x.is_floating_point():
            return x
        return x.to(self.param_dtype)

    def optimizer(
        self,
        name: str,
        params: Iterable[nn.Parameter],
        lr: float,
        *,
        betas: tuple[float, float] = (0.9, 0.999),
        weight_decay: float = 0.0,
        capturable: bool = False,
    ) -> torch.optim.Optimizer:
        """The optimizer row `name` of `optimizers.OPTIMIZERS` over `params`: torch's Adam, or
        AdamW with nanoGPT's weight-decay groups (`Optimizer.decay_groups`), at `lr`, `betas`
        and (AdamW's only) `weight_decay`; torchao's stochastically rounding AdamW in its place
        for a mode that asks for it."""
        row = OPTIMIZERS[name]
        groups: list = list(params)
        if row.decay_groups:
            live = [p for p in groups if p.requires_grad]
            groups = [
                {"params": [p for p in live if p.dim() >= 2], "weight_decay": weight_decay},
                {"params": [p for p in live if p.dim() < 2], "weight_decay": 0.0},
            ]
        elif weight_decay:
            raise ValueError(
                f"weight decay {weight_decay:g}: optimizer {name!r} has none (an adamw row has)"
            )
        if self.stochastic_round:
            from torchao.optim import _AdamW  # optional dependency: imported only when used

            # weight_decay 0 without groups: the same update as torch's Adam, which the other
            # modes run.
            return _AdamW(
                groups, lr=lr, betas=betas, weight_decay=weight_decay, bf16_stochastic_round=True
            )
        adam = torch.optim.AdamW if row.decay_groups else torch.optim.Adam
        # `capturable` keeps every piece of Adam's state on the device, as a CUDA graph capture
        # of the step needs.
        return adam(
            groups,
            lr=lr,
            betas=betas,
            weight_decay=weight_decay,
            capturable=capturable,
            **row.adam,
        )

    def scaler(self, device: str) -> torch.amp.GradScaler:
        """GradScaler, enabled only when the mode scales the loss (otherwise scale() returns the
        loss and step() calls optimizer.step() unchanged)."""
        return torch.amp.GradScaler(device, enabled=self.scale_loss)

    @contextlib.contextmanager
    def context(self, device: str, *, forward: bool = False, cache: bool = True) -> Iterator[None]:
        """One phase's precision context: TF32 as the mode wants it and, for the forward pass only,
        autocast (around the forward and the loss alone, as its docstring asks). `cache=False` turns
        off autocast's cache of weight casts, as a CUDA graph capture needs."""
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


_DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16}
"""A card's dtype names -> torch dtypes."""


@functools.cache
def of_card(card: ModeCard) -> Mode:
    """The torch side of a mode, from its card (`bench.ground.catalog`), one per card."""
    return Mode(
        name=card.name,
        autocast_dtype=_DTYPES.get(card.autocast_dtype or ""),
        scale_loss=card.scale_loss,
        tf32=card.tf32,
        param_dtype=_DTYPES.get(card.param_dtype or ""),
        stochastic_round=card.stochastic_round,
        fp8_scaling=card.fp8_scaling,
        card=card,
    )


class _Modes(Mapping[str, Mode]):
    """The mode table's rows as modes, read live (a card registered later is here too): for
    code that holds a mode's name, not a plan (`bench.plan.plan`)."""

    def __getitem__(self, name: str) -> Mode:
        return of_card(CARDS[name])

    def __iter__(self) -> Iterator[str]:
        return iter(CARDS)

    def __len__(self) -> int:
        return len(CARDS)


MODES: Mapping[str, Mode] = _Modes()
"""Every mode's torch side by name, in the table's order."""


def tf32_flags() -> dict[str, bool]:
    """The TF32 switches in force right now, as recorded in every row."""
    return {
        "tf32_matmul": bool(torch.backends.cuda.matmul.allow_tf32),
        "tf32_cudnn": bool(torch.backends.cudnn.allow_tf32),
    }


@contextlib.contextmanager
def tf32_enabled(enabled: bool) -> Iterator[None]:
    """Both TF32 switches set for a region, restored after. The legacy `allow_tf32` flags, for
    setting and reading: newer torch refuses to mix them with `fp32_precision` in one process."""
    matmul, cudnn = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = enabled
    torch.backends.cudnn.allow_tf32 = enabled
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = matmul
        torch.backends.cudnn.allow_tf32 = cudnn
