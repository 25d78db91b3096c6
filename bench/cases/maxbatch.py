"""The settings of a largest-batch search (`python -m bench maxbatch`): modes, variants, Adam, the
batch range and how finely it bisects. Importable without torch."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from bench.cases import checks
from bench.cases.case import DEVICES
from bench.ground import axes, cards, catalog, optimizers

CPU_DEFAULTS = {"start": 8, "limit": 4096}
"""A search on the CPU (tiny preset) starts and stops lower."""


@dataclass(frozen=True, kw_only=True)
class MaxBatchConfig:
    device: str = field(metadata={"check": checks.choice(DEVICES), "cli": False})
    preset: str = field(metadata={"check": checks.Check("is not a name", str, bool), "cli": False})
    model: str = field(default=cards.DEFAULT, metadata={"check": checks.MODEL})
    """The workload: mlp, gpt (batch sizes in sequences), resnet50 (in images), a zoo model
    (hf:NAME[:TASK], timm:NAME, torchvision:NAME), or package.module:factory."""
    modes: tuple[str, ...] = field(
        default=catalog.default_modes(),
        metadata={"check": checks.choice(catalog.CARDS), "items": True},
    )
    """Comma list of modes searched."""
    variants: tuple[str, ...] = field(
        default=("eager",), metadata={"check": checks.choice(axes.VARIANTS), "items": True}
    )
    """Comma list of execution variants searched."""
    optimizer: str = field(
        default="fused",
        metadata={"check": checks.choice(optimizers.OPTIMIZERS), "aliases": ("--optimizers",)},
    )
    """Adam implementation."""
    start: int = field(default=1024, metadata={"check": checks.POSITIVE_INT})
    """The first batch size tried; the search doubles from here."""
    limit: int = field(default=2**20, metadata={"check": checks.POSITIVE_INT})
    """The largest batch size tried: the search stops there even if it still trains."""
    resolution: float = field(default=1 / 16, metadata={"check": checks.FRACTION})
    """Bisection stops when the gap between the last good and the first bad batch size is at
    most this share of the good one."""
    warmup: int = field(default=1, metadata={"check": checks.NON_NEGATIVE_INT})
    """Untimed steps per trial."""
    steps: int = field(default=2, metadata={"check": checks.POSITIVE_INT})
    """Timed steps per trial."""

    def __post_init__(self) -> None:
        checks.fields(self)
        if self.model in cards.CARDS:
            checks.choice(cards.CARDS[self.model].presets)("--preset", self.preset)
        if not self.start <= self.limit:
            raise ValueError(f"start must be between 1 and limit ({self.limit}), got {self.start}")

    def record(self) -> dict[str, object]:
        return dataclasses.asdict(self)
