"""A benchmark case: one point of the grid, every axis named, validated once.

Later axes (execution variant, fp8, number of GPUs) become new fields here with a default, so old
rows and old command lines keep their meaning.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable
from dataclasses import asdict, dataclass

from bench.model import ModelSize
from bench.modes import MODES

OPTIMIZERS = ("foreach", "fused")
"""Adam implementations: `foreach` (PyTorch's default multi-tensor kernels) and `fused` (one kernel,
which also applies GradScaler's unscale and inf check itself, with no host sync)."""

DEVICES = ("cuda", "cpu")
REDUCTIONS = ("mean", "sum")


_SETTINGS = ("lr", "loss_mult", "reduction", "init_scale")
"""Fields that shape training rather than name the grid point; in case_id only when not default."""


def _positive_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


@dataclass(frozen=True, kw_only=True)
class Case:
    mode: str
    """Key of `bench.modes.MODES`."""
    optimizer: str
    """Adam implementation, one of `OPTIMIZERS`."""
    batch_size: int
    input_size: int
    hidden_size: int
    num_classes: int
    device: str = "cuda"
    seed: int = 0
    """Seeds the weights and the synthetic batch."""
    warmup: int = 5
    """Untimed steps before the timed window (allocator, cuBLAS handles, autocast caches)."""
    steps: int = 30
    """Timed steps; statistics come from these samples."""
    lr: float = 1e-3
    """Adam's learning rate (the question's 1e-3)."""
    # Stress settings: where fp16's margins for underflow and overflow show.
    loss_mult: float = 1.0
    """Multiply the loss by this (gradient accumulation over k micro-batches uses 1/k)."""
    reduction: str = "mean"
    """CrossEntropyLoss reduction: `sum` makes gradients B times larger than `mean`."""
    init_scale: float = 1.0
    """Multiply every initial weight and bias by this (small values shrink every gradient)."""

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown mode {self.mode!r}; choose from {', '.join(MODES)}")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(
                f"unknown optimizer {self.optimizer!r}; choose from {', '.join(OPTIMIZERS)}"
            )
        if self.device not in DEVICES:
            raise ValueError(f"unknown device {self.device!r}; choose from {', '.join(DEVICES)}")
        for name in ("batch_size", "input_size", "hidden_size", "num_classes", "steps"):
            _positive_int(name, getattr(self, name))
        if isinstance(self.warmup, bool) or not isinstance(self.warmup, int) or self.warmup < 0:
            raise ValueError(f"warmup must be a non-negative integer, got {self.warmup!r}")
        if self.reduction not in REDUCTIONS:
            raise ValueError(
                f"unknown reduction {self.reduction!r}; choose from {', '.join(REDUCTIONS)}"
            )
        for name in ("lr", "loss_mult", "init_scale"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0:
                raise ValueError(f"{name} must be a positive number, got {value!r}")

    @classmethod
    def of(cls, size: ModelSize, **axes: object) -> Case:
        """A case of the given model size; `axes` are the other fields."""
        return cls(
            input_size=size.input_size,
            hidden_size=size.hidden_size,
            num_classes=size.num_classes,
            **axes,
        )

    @property
    def size(self) -> ModelSize:
        return ModelSize(
            input_size=self.input_size, hidden_size=self.hidden_size, num_classes=self.num_classes
        )

    @property
    def case_id(self) -> str:
        """A stable name of the case's axes, used to resume runs and to match cases across runs."""
        base = (
            f"{self.mode}/{self.optimizer}/b{self.batch_size}"
            f"/{self.input_size}x{self.hidden_size}x{self.num_classes}/{self.device}/s{self.seed}"
        )
        # Settings at their defaults stay out of the name, so ids of earlier runs keep matching.
        extras = [
            f"{f.name}={getattr(self, f.name)}"
            for f in dataclasses.fields(self)
            if f.name in _SETTINGS and getattr(self, f.name) != f.default
        ]
        return "/".join([base, *extras])

    def axes(self) -> dict[str, object]:
        return asdict(self)


def grid(
    *,
    modes: Iterable[str],
    optimizers: Iterable[str],
    batch_sizes: Iterable[int],
    size: ModelSize,
    **fixed: object,
) -> list[Case]:
    """Every combination of the given axes, batch size outermost so that a report grouped by
    batch size fills in as the run goes."""
    return [
        Case.of(size, mode=mode, optimizer=opt, batch_size=bs, **fixed)
        for bs, opt, mode in itertools.product(batch_sizes, optimizers, modes)
    ]
