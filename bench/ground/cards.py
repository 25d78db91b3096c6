"""The built-in workloads as torch-free cards (name, presets, sizing) and the zoos' prefixes.

A case and the command line's parser read this table without torch; it imports nothing. The
registry refuses, at import, a built-in `Workload` whose presets or flags differ from its card."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

FLAGS = ("free_sizes", "short_numerics", "cpu_overhead")
"""How a workload's cases are sized and run: the fields a `Workload` shares with its card."""


@dataclass(frozen=True, kw_only=True)
class Card:
    """What a workload is without torch: the names a case is checked against and what its
    cases carry."""

    name: str
    """The `--model` value and the case's `model` axis."""
    presets: tuple[str, ...]
    """Its presets' names, in the order `--help` shows them."""
    sizes: tuple[str, ...]
    """The names of its sizes, in its order (`bench.cases.sizes.Sizes`): what its cases carry
    and their ids spell out. A row of older code, which recorded the values alone, is read with
    these names (`bench.store.schema`)."""
    free_sizes: bool = False
    """Its size is the case's sizes, any positive ones, not only a preset's: a case carries the
    sizes and an empty preset (`options` override a preset's). The MLP's, whose case ids
    predate workloads."""
    options: Mapping[str, str] = field(default_factory=dict)
    """Size name -> the run's option that sets it (`input` -> `--input-size`), for a workload
    whose sizes are free; the command line offers each (`bench.cli.run`)."""
    short_numerics: bool = False
    """A timing run may begin with a short numerics study of it (`run --numerics`)."""
    cpu_overhead: bool = False
    """A CPU run checks the harness's overhead on it by default: its CPU step is short enough
    that the harness's microseconds show (a larger model's tens of milliseconds hide them)."""
    shape: str = ""
    """Its model in a report, from a record's sizes, where they are its own (`free_sizes`): a
    format string over the names of `sizes`."""
    module: str = ""
    """The module whose `WORKLOAD` is this card's torch side (`bench.workloads.registry` imports
    it by this name): a new built-in model is its card here and that module."""

    def flags(self) -> dict[str, bool]:
        """The fields a `Workload` takes from its card (`FLAGS`), by name."""
        return {name: getattr(self, name) for name in FLAGS}


MLP = Card(
    name="mlp",
    presets=("seed", "tiny"),
    sizes=("input", "hidden", "classes"),
    free_sizes=True,
    # The options of every run before workloads.
    options={"input": "--input-size", "hidden": "--hidden-size", "classes": "--num-classes"},
    short_numerics=True,
    cpu_overhead=True,
    shape="{input} → {hidden} → {hidden} → {classes}",
    module="bench.workloads.mlp",
)
GPT = Card(
    name="gpt",
    presets=("gpt2-124m", "gpt-1.3b", "tiny", "shakespeare-char", "shakespeare-tiny"),
    sizes=("context", "width", "vocab"),
    module="bench.workloads.gpt",
)
RESNET = Card(
    name="resnet50",
    presets=("resnet50", "tiny"),
    sizes=("image", "features", "classes"),
    module="bench.workloads.resnet",
)

CARDS: dict[str, Card] = {card.name: card for card in (MLP, GPT, RESNET)}
"""The built-in workloads by name (`bench.workloads.registry.BUILT_IN` holds their torch side)."""
DEFAULT = MLP.name
"""The workload of a case or a command that names none: the MLP of the question."""
ZOOS = ("hf", "timm", "torchvision")
"""The zoos' prefixes: a `--model` value `PREFIX:NAME` is a zoo model
(`bench.workloads.registry.RESOLVERS`)."""


def option_of(name: str) -> tuple[Card, str] | None:
    """The card whose free sizes include `name`, and the run's option that sets it."""
    for c in CARDS.values():
        if name in c.options:
            return c, c.options[name]
    return None


def card(model: str) -> Card | None:
    """The card of a built-in workload; None for a zoo model or a user's (known only to the
    registry, above the cases)."""
    return CARDS.get(model)
