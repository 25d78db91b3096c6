"""A benchmark case: one point of the grid, every axis a field, validated once. A new field needs
a default that reproduces earlier behaviour: ids leave a field at its default out, and older rows
are read with it."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from bench.cases import checks
from bench.cases.sizes import Sizes
from bench.ground import axes, cards, catalog, optimizers

# A case is names and numbers, and imports nothing of the registries (torch), inside a function
# either: reading a folder (`bench.store.results`, which needs only the fields) and the command
# line's parser import no torch, and every layer above may build a case. Names are checked
# against the torch-free tables: the modes' (`bench.ground.catalog`), the optimizers'
# (`bench.ground.optimizers`), the workloads' (`bench.ground.cards`), the variants' and
# parallelisms' (`bench.ground.axes`).
# A job resolves a case into its objects once (`bench.plan.plan.resolve`); its sizes are the
# workload's own (`Workload.case`, which gives them).

DEVICES = ("cuda", "cpu")
REDUCTIONS = ("mean", "sum")

_ID_FIELDS = ("mode", "optimizer", "batch_size", "sizes", "device", "seed")
"""The axes every case id spells out, in the order of the first runs' ids; any other axis joins
the id as `name=value` only when it is not at its default."""


@dataclass(frozen=True)
class Sweep:
    """How a timing run sweeps an axis of `Case` over several values (`RunConfig`)."""

    plural: str
    """The name of the axis's values in a run's config and in env.json (`modes`)."""
    noun: str
    """The axis in words, in the index's grid line (`2 modes`, `batch 256–4096`)."""
    option: str | None = None
    """The run's option, when it is not `--` and `plural` (`--parallel`)."""
    aliases: tuple[str, ...] = ()
    """Other spellings of the option (`--optimizer`)."""
    help: str | None = None
    """What the option's help says of the axis, where the field's docstring does not fit."""

    @property
    def flag(self) -> str:
        return self.option or "--" + self.plural.replace("_", "-")


def _axis(check: checks.Check, sweep: Sweep | None = None) -> dict[str, object]:
    """A field's metadata: its check, and how a timing run sweeps it (None: it does not)."""
    return {"check": check, "sweep": sweep}


def _measure(check: checks.Check) -> dict[str, object]:
    """A measurement setting's metadata: not an axis (see the module's docstring)."""
    return {"check": check, "measure": True}


SIZES = checks.Check("is not a Sizes (bench.cases.sizes)", str, lambda v: isinstance(v, Sizes))


_MODES_HELP = "precision modes (on the CPU, by default only those that can run there)"


@dataclass(frozen=True, kw_only=True)
class Case:
    mode: str = field(
        metadata=_axis(checks.choice(catalog.CARDS), Sweep("modes", "mode", help=_MODES_HELP))
    )
    """A mode of the mode table (`bench.ground.catalog.CARDS`)."""
    optimizer: str = field(
        metadata=_axis(
            checks.choice(optimizers.OPTIMIZERS),
            Sweep("optimizers", "optimizer", aliases=("--optimizer",)),
        )
    )
    """Adam implementation, a key of `bench.ground.optimizers.OPTIMIZERS`."""
    variant: str = field(
        default="eager",
        metadata=_axis(checks.choice(axes.VARIANTS), Sweep("variants", "variant")),
    )
    """How the step is executed, a key of `bench.ground.axes.VARIANTS`."""
    parallel: str = field(
        default="none",
        metadata=_axis(
            checks.choice(axes.PARALLELS),
            Sweep("parallels", "parallelism", option="--parallel"),
        ),
    )
    """How the model is spread over the ranks of a distributed run, a key of
    `bench.ground.axes.PARALLELS` (`none`: one GPU, no communication)."""
    batch_size: int = field(metadata=_axis(checks.POSITIVE_INT, Sweep("batch_sizes", "batch")))
    """Samples per step, per GPU."""
    sizes: Sizes = field(metadata=_axis(SIZES))
    """The workload's own sizes, by name (`bench.workloads.base.Workload.sizes`): the MLP's
    input, hidden and classes, a GPT's context, width and vocabulary. The id spells their values
    (`256x384x65`)."""
    model: str = field(default=cards.DEFAULT, metadata=_axis(checks.MODEL))
    """The workload (`bench.workloads.registry`): `mlp`, the question's MLP; `gpt`, a GPT-style
    transformer; `resnet50`; a zoo model by name (`hf:gpt2`, `timm:convnext_tiny`,
    `torchvision:resnet50`); or a user's own, as `package.module:factory`."""
    preset: str = field(
        default="",
        metadata=_axis(checks.Check("is not a preset name", str, lambda v: isinstance(v, str))),
    )
    """The workload's size preset. Empty for a workload whose size is `sizes` alone
    (`Card.free_sizes`: the MLP, as every case before workloads); another workload's sizes are
    its preset's."""
    device: str = field(default="cuda", metadata=_axis(checks.choice(DEVICES)))
    seed: int = field(default=0, metadata=_axis(checks.NON_NEGATIVE_INT))
    """Seeds the weights and the synthetic batch."""
    lr: float = field(default=1e-3, metadata=_axis(checks.POSITIVE_FINITE))
    """Adam's learning rate (the question's 1e-3)."""
    # Stress settings: where fp16's margins for underflow and overflow show.
    loss_mult: float = field(default=1.0, metadata=_axis(checks.POSITIVE_FINITE))
    """Multiply the loss by this (gradient accumulation over k micro-batches uses 1/k)."""
    reduction: str = field(default="mean", metadata=_axis(checks.choice(REDUCTIONS)))
    """CrossEntropyLoss reduction: `sum` makes gradients B times larger than `mean`."""
    init_scale: float = field(default=1.0, metadata=_axis(checks.POSITIVE_FINITE))
    """Multiply every initial weight and bias by this (small values shrink every gradient)."""
    warmup: int = field(default=5, metadata=_measure(checks.NON_NEGATIVE_INT))
    """Untimed steps before the timed window (allocator, cuBLAS handles, autocast caches)."""
    steps: int = field(default=30, metadata=_measure(checks.POSITIVE_INT))
    """Timed steps per window; statistics come from these samples."""
    repeats: int = field(default=1, metadata=_measure(checks.POSITIVE_INT))
    """Timed windows of `steps` steps, one after another after the one warm-up; each window's
    median is one observation of the case for `bench compare`. Not an axis: a case measured with
    more windows is the same case (1, the default, is how runs before this field measured)."""
    min_repeats: int = field(default=0, metadata=_measure(checks.NON_NEGATIVE_INT))
    """The fewest timed windows: from it up to `repeats`, timing stops once the windows are
    narrow enough (`bench.measure.adaptive`). 0 (the default, and every case before this field):
    exactly `repeats`."""

    def __post_init__(self) -> None:
        checks.fields(self)
        card = cards.card(self.model)  # None: a zoo's or a user's, the registry's to check
        if card is not None and card.free_sizes and self.preset:
            raise ValueError(
                f"preset {self.preset!r}: {self.model}'s sizes are its fields; leave it empty"
            )
        if card is not None and not card.free_sizes:
            checks.choice(card.presets)(f"--preset of {self.model}", self.preset)
        if card is not None and self.sizes.names != card.sizes:
            raise ValueError(
                f"sizes {self.sizes.words()}: {self.model}'s are {', '.join(card.sizes)}"
            )

    @property
    def case_id(self) -> str:
        """A stable name of the case's axes, used to resume runs and to match cases across runs."""
        base = (
            f"{self.mode}/{self.optimizer}/b{self.batch_size}"
            f"/{self.sizes}/{self.device}/s{self.seed}"
        )
        # Other axes at their defaults stay out of the name, so ids of earlier runs keep matching.
        extras = [
            f"{name}={getattr(self, name)}"
            for name, default in axis_defaults(type(self)).items()
            if name not in _ID_FIELDS and getattr(self, name) != default
        ]
        return "/".join([base, *extras])

    def axes(self) -> dict[str, object]:
        """Every field, axes and measurement settings alike, as a row records them (rows.jsonl
        writes the sizes as a JSON object, name -> value: `bench.store.results.append_jsonl`)."""
        # Not dataclasses.asdict, which would take the sizes apart into their two tuples.
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


def axis_defaults(cls: type[Case] | None = None) -> dict[str, object]:
    """The axes of a case (its fields but the measurement settings), in field order, each with
    its default (`dataclasses.MISSING` where it has none)."""
    return {
        f.name: f.default
        for f in dataclasses.fields(cls or Case)
        if not f.metadata.get("measure", False)
    }


def swept(cls: type[Case] | None = None) -> dict[str, Sweep]:
    """The axes a timing run sweeps (field name -> how), in field order."""
    return {
        f.name: f.metadata["sweep"]
        for f in dataclasses.fields(cls or Case)
        if f.metadata.get("sweep") is not None
    }


def sweep(values: Mapping[str, Iterable[object]], **fixed: object) -> list[Case]:
    """Every combination of the swept axes' `values` (field name -> values), later fields
    outermost: batch size outermost, so that a report grouped by batch size fills in as the run
    goes; within a batch size the one-GPU baseline (`parallel=none`) comes before the
    parallelisms measured against it. `fixed` sets the other fields (the sizes among them)."""
    names = list(reversed(values))
    return [
        Case(**dict(zip(names, combo, strict=True)), **fixed)
        for combo in itertools.product(*(values[name] for name in names))
    ]


def grid(
    *,
    modes: Iterable[str],
    optimizers: Iterable[str],
    batch_sizes: Iterable[int],
    variants: Iterable[str] = ("eager",),
    parallels: Iterable[str] = ("none",),
    **fixed: object,
) -> list[Case]:
    """`sweep` over the five axes of the first runs, by their plural names."""
    values = {
        "mode": modes,
        "optimizer": optimizers,
        "variant": variants,
        "parallel": parallels,
        "batch_size": batch_sizes,
    }
    return sweep(values, **fixed)
