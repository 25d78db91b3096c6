"""The `sweep` study's settings (`ampbench sweep -- python train.py`): the script, the modes and
seeds, the timed looks and the budget, checked once as they are made."""

from __future__ import annotations

from dataclasses import dataclass

from bench.ground import catalog
from bench.verdicts import driver, sequential, training
from bench.verdicts.defaults import CONFIDENCE, MIN_EFFECT


@dataclass(frozen=True, kw_only=True)
class SweepConfig:
    script: tuple[str, ...]
    """The command that trains, as given after `--` (`python train.py ARGS`)."""
    modes: tuple[str, ...]
    """The modes, by the mode table's names; the reference first where it is among them."""
    seeds: tuple[int, ...] = (0, 1, 2)
    """One round per seed: each mode runs once at each."""
    metric: str | None = None
    """The logged metric the training judge reads (lower is better); None: the first of
    `val_loss`, `eval_loss`, `loss` that every run logged."""
    timeout_s: float = 3600.0
    """A run still going after this long is stopped and is a `timeout` row."""
    device: str = "cuda"
    workers: int = 0
    """Runs side by side for the seeds not timed alone; 0: auto (`bench.lifecycle.packing`)."""
    timed_seeds: int = 3
    """The first this many seeds of each mode run alone, and only they give step times (the
    speed rule's first look); each later look adds one run alone while a mode's speed is
    undecided."""
    max_seeds: int | None = None
    """A sequential study's cap on seeds a mode (None: one look, at `seeds`)."""
    budget_s: float = 0.0
    """Seconds the command may run for; no look starts past it (0: none)."""
    expected_drop: float = training.LEARNED_DROP
    """The share below its value before training that fp32's best must reach for the training
    judge to say it learned: a fine-tuning script, which starts from trained weights, declares
    less (`bench.verdicts.training.target`)."""
    min_effect: float = MIN_EFFECT
    """The smallest speed change called faster or slower; `same`: within it."""
    confidence: float = CONFIDENCE  # 1 minus it: the chance of any false speed call allowed

    def __post_init__(self) -> None:
        if not self.script:
            raise ValueError("no script: give the command after --, e.g. -- python train.py")
        for name in self.modes:
            if catalog.card(name) is None:
                raise ValueError(f"mode {name!r}: choose from {', '.join(catalog.CARDS)}")
        if not self.modes:
            raise ValueError("modes: give at least one")
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds {self.seeds!r}: give distinct seeds")
        if not self.timeout_s > 0:
            raise ValueError(f"timeout_s={self.timeout_s!r}: give a positive number of seconds")
        if self.workers < 0:
            raise ValueError(f"workers={self.workers!r}: give 0 (auto) or more")
        if self.timed_seeds < 1:
            raise ValueError(f"timed_seeds={self.timed_seeds!r}: give 1 or more")
        if self.budget_s < 0:
            raise ValueError(f"budget_s={self.budget_s!r}: give 0 (none) or more seconds")
        if not 0 < self.expected_drop < 1:
            raise ValueError(f"expected_drop={self.expected_drop!r}: give a share between 0 and 1")
        self.design()  # a cap below the first look: ValueError

    @property
    def cap(self) -> int | None:
        """The seeds a mode at most: `max_seeds`, else with a budget the rule's default."""
        if self.max_seeds is None and self.budget_s:
            return sequential.DEFAULT_MAX_SEEDS
        return self.max_seeds

    def design(self) -> sequential.Design | None:
        """The sequential study's plan (its first look at `seeds`, its cap), or None."""
        return None if self.cap is None else sequential.Design(len(self.seeds), self.cap)

    def speed_plan(self) -> driver.SpeedPlan:
        """The timed looks: the seeds timed alone first, then one run alone a look at each of
        the design's later looks (one look where there is no design)."""
        first, design = min(self.timed_seeds, len(self.seeds)), self.design()
        looks = len(design.looks()) if design else 1
        return driver.SpeedPlan(first, first + looks - 1, self.confidence)

    def seed_order(self) -> tuple[int, ...]:
        """The seeds in the order the looks take them: `seeds`, then the integers above them,
        up to `max_seeds` in all."""
        top, more = max(self.seeds), max((self.cap or 0) - len(self.seeds), 0)
        return (*self.seeds, *range(top + 1, top + 1 + more))


def default_modes(device: str) -> tuple[str, ...]:
    """The modes a script takes by a switch (`bench.ownloop.contract.SUPPORTED_KINDS`) that scale
    as their dtype is meant to (fp16 with a scaler, bf16 without), and the float32 ones; on the
    CPU those without TF32 or float16 (no CPU runs them)."""
    amp = catalog.autocast_modes()
    out = [name for name, card in catalog.CARDS.items() if card.kind == "float32" or name in amp]
    if device == "cpu":
        out = [
            n for n in out if not catalog.CARDS[n].tf32 and catalog.CARDS[n].low_dtype != "float16"
        ]
    return tuple(out)
