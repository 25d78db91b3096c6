"""A benchmark case: one point of the grid, every axis a field, validated once.

Every field is an axis of the case except those marked `measure` (how long it is timed), which say
how a case was measured rather than what it is. `axes()` lists them; tables, case ids, speedup
joins and `bench compare` all derive from it, so a new axis is a new field here and nothing else.
A new field must have a default that reproduces earlier behaviour: case ids leave a field out while
it has its default, and rows of older folders, which lack the column, are read with that default,
so old ids and old folders keep their meaning.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

# The registries (and ModelSize) import torch: they are imported where a case is built or
# sized, so that reading a folder (`bench.store.results`, which needs only the fields) and the
# command
# line's parser import no torch.
if TYPE_CHECKING:
    from bench.workloads.mlp import ModelSize

DEVICES = ("cuda", "cpu")
REDUCTIONS = ("mean", "sum")

_ID_FIELDS = (
    "mode",
    "optimizer",
    "batch_size",
    "input_size",
    "hidden_size",
    "num_classes",
    "device",
    "seed",
)
"""The axes every case id spells out, in the order of the first runs' ids; any other axis joins
the id as `name=value` only when it is not at its default."""

_MEASURE = {"measure": True}


def _positive_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def _positive_finite(name: str, value: object) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not 0 < value < float("inf")
    ):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")


def _choice(name: str, value: object, choices: Iterable[str]) -> None:
    choices = tuple(choices)
    if value not in choices:
        raise ValueError(f"unknown {name} {value!r}; choose from {', '.join(choices)}")


@dataclass(frozen=True, kw_only=True)
class Case:
    mode: str
    """Key of `bench.recipes.modes.MODES`."""
    optimizer: str
    """Adam implementation, a key of `bench.recipes.modes.OPTIMIZERS`."""
    variant: str = "eager"
    """How the step is executed, a key of `bench.execution.variants.VARIANTS`."""
    parallel: str = "none"
    """How the model is spread over the ranks of a distributed run, a key of
    `bench.execution.parallel.PARALLELS` (`none`: one GPU, no communication)."""
    batch_size: int
    input_size: int
    hidden_size: int
    num_classes: int
    device: str = "cuda"
    seed: int = 0
    """Seeds the weights and the synthetic batch."""
    lr: float = 1e-3
    """Adam's learning rate (the question's 1e-3)."""
    # Stress settings: where fp16's margins for underflow and overflow show.
    loss_mult: float = 1.0
    """Multiply the loss by this (gradient accumulation over k micro-batches uses 1/k)."""
    reduction: str = "mean"
    """CrossEntropyLoss reduction: `sum` makes gradients B times larger than `mean`."""
    init_scale: float = 1.0
    """Multiply every initial weight and bias by this (small values shrink every gradient)."""
    warmup: int = field(default=5, metadata=_MEASURE)
    """Untimed steps before the timed window (allocator, cuBLAS handles, autocast caches)."""
    steps: int = field(default=30, metadata=_MEASURE)
    """Timed steps per window; statistics come from these samples."""
    repeats: int = field(default=1, metadata=_MEASURE)
    """Timed windows of `steps` steps, one after another after the one warm-up; each window's
    median is one observation of the case for `bench compare`. Not an axis: a case measured with
    more windows is the same case (1, the default, is how runs before this field measured)."""

    def __post_init__(self) -> None:
        from bench.execution.parallel import PARALLELS
        from bench.execution.variants import VARIANTS
        from bench.recipes.modes import MODES, OPTIMIZERS

        _choice("mode", self.mode, MODES)
        _choice("optimizer", self.optimizer, OPTIMIZERS)
        _choice("variant", self.variant, VARIANTS)
        _choice("parallel", self.parallel, PARALLELS)
        _choice("device", self.device, DEVICES)
        _choice("reduction", self.reduction, REDUCTIONS)
        for name in ("batch_size", "input_size", "hidden_size", "num_classes", "steps", "repeats"):
            _positive_int(name, getattr(self, name))
        for name in ("seed", "warmup"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
        for name in ("lr", "loss_mult", "init_scale"):
            _positive_finite(name, getattr(self, name))

    @classmethod
    def of(cls, size: ModelSize, **axes: object) -> Case:
        """A case of the given model size; `axes` are the other fields."""
        return cls(**dataclasses.asdict(size), **axes)

    @property
    def size(self) -> ModelSize:
        from bench.workloads.mlp import ModelSize

        return ModelSize.of(self)

    @property
    def case_id(self) -> str:
        """A stable name of the case's axes, used to resume runs and to match cases across runs."""
        base = (
            f"{self.mode}/{self.optimizer}/b{self.batch_size}"
            f"/{self.input_size}x{self.hidden_size}x{self.num_classes}/{self.device}/s{self.seed}"
        )
        # Other axes at their defaults stay out of the name, so ids of earlier runs keep matching.
        extras = [
            f"{name}={getattr(self, name)}"
            for name, default in axis_defaults(type(self)).items()
            if name not in _ID_FIELDS and getattr(self, name) != default
        ]
        return "/".join([base, *extras])

    def axes(self) -> dict[str, object]:
        """Every field, axes and measurement settings alike, as a row records them."""
        return dataclasses.asdict(self)


def axis_defaults(cls: type[Case] | None = None) -> dict[str, object]:
    """The axes of a case (its fields but the measurement settings), in field order, each with
    its default (`dataclasses.MISSING` where it has none)."""
    return {
        f.name: f.default
        for f in dataclasses.fields(cls or Case)
        if not f.metadata.get("measure", False)
    }


def grid(
    *,
    modes: Iterable[str],
    optimizers: Iterable[str],
    batch_sizes: Iterable[int],
    size: ModelSize,
    variants: Iterable[str] = ("eager",),
    parallels: Iterable[str] = ("none",),
    **fixed: object,
) -> list[Case]:
    """Every combination of the given axes, batch size outermost so that a report grouped by
    batch size fills in as the run goes; within a batch size the one-GPU baseline
    (`parallel=none`) comes before the parallelisms measured against it."""
    return [
        Case.of(
            size, mode=mode, optimizer=opt, variant=variant, parallel=par, batch_size=bs, **fixed
        )
        for bs, par, variant, opt, mode in itertools.product(
            batch_sizes, parallels, variants, optimizers, modes
        )
    ]
