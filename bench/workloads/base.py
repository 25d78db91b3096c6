"""What a workload is: everything the harness needs from a model (its build, synthetic batch,
loss, throughput unit, sharded and observed modules, float8 plan), and nothing about precision."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import torch
from torch import nn

from bench.cases.case import Case
from bench.cases.sizes import Sizes
from bench.data.sources import Batch, DataShape, generator
from bench.ground import cards
from bench.workloads import heads, structure
from bench.workloads.tasks import PoolTask, Task


def size_key(size: object) -> object:
    """A size as a cache key: itself where it hashes (the built-in sizes are frozen
    dataclasses), else its repr (a user's size object that does not hash)."""
    try:
        hash(size)
    except TypeError:
        return repr(size)
    return size


def _device_of(model: nn.Module) -> str:
    first = next(model.parameters(), None)
    return first.device.type if first is not None else "cpu"


_STRUCTURES: dict[tuple[str, object, str], structure.Structure] = {}
_SHAPES: dict[tuple[int, object], tuple[Workload, nn.Module]] = {}


@dataclass(frozen=True, kw_only=True)
class Workload:
    """A model as one plug-in (as torchtitan's `TrainSpec`): how to build it, its presets, batch,
    loss and named sizes, and its structure (by default what `bench.workloads.structure` finds).
    Nothing outside a workload branches on its name: what differs is a field here. Resolved by
    name in `bench.workloads.registry`."""

    name: str
    """The `--model` value and the case's `model` axis."""
    description: str
    """One line for reports and `--help`."""
    presets: Mapping[str, object]
    """Preset name -> the workload's own size object."""
    default_preset: Mapping[str, str]
    """Device (`cuda`, `cpu`) -> the preset a run takes when none is given."""
    build: Callable[[object, str, int], nn.Module]
    """(size, device, seed) -> the model on the device, initialised from the seed."""
    make_batch: Callable[[object, int, str, int], Batch]
    """(size, batch_size, device, seed) -> a deterministic synthetic batch made on the device."""
    loss: Callable[[object, torch.Tensor, str], torch.Tensor]
    """(output as the model returned it, targets, reduction) -> the loss (`mean`, or `sum` for
    the numerics' stress). What measures an output asks `bench.workloads.outputs.tensor`."""
    linears: Callable[[object], dict[str, tuple[int, int]]] | None = None
    """size -> every Linear by module name, as (in_features, out_features), in forward order;
    None: found in the module tree (`structure.linears`). Ask `linears_of`."""
    fp8_excluded: Callable[[object], dict[str, str]] | None = None
    """size -> the Linears a float8 mode must leave in higher precision, each with why (the
    mode's own size thresholds apply to the rest: `bench.modes.fp8.plan`); None: the output
    head and the tied weights found in the module tree (`structure.fp8_excluded`). Ask
    `fp8_excluded_of`."""
    blocks: Callable[[nn.Module], list[nn.Module]] | None = None
    """The modules FSDP2 shards one by one before the root (a transformer's blocks); None:
    found in the module tree (`bench.workloads.structure`). Ask `blocks_of`."""
    observed: Callable[[nn.Module], dict[str, nn.Module]] | None = None
    """Name -> module whose output the numerics study observes, in forward order, the last
    one's output the logits; None: found in the module tree. Ask `observed_of`."""
    audited: Callable[[object], str] | None = None
    """size -> the parameter whose autograd chain and Adam state the numerics audit records (as
    `named_parameters()` names it); None: the weight of the first matmul to run, found in the
    module tree. Ask `audited_of`."""
    named_sizes: Callable[[object], Mapping[str, int]]
    """size -> its sizes by name, in the workload's order: what a case carries and its id
    spells out (`input`, `hidden`, `classes` for the MLP, `context`, `width`, `vocab` for the
    GPT: `6x8x5`). A built-in workload's names are its card's. Ask `sizes`."""
    from_sizes: Callable[[Sizes], object] | None = None
    """Its sizes -> the size object, for a workload whose size may be any, not only a preset's
    (`free_sizes`: the MLP's `--input-size` and its kin); None: a preset's alone."""
    free_sizes: bool = False
    """Its cases carry their own sizes and an empty preset, and its size is
    `from_sizes(the case's sizes)` (`bench.ground.cards.Card.free_sizes`)."""
    short_numerics: bool = False
    """A timing run may begin with a short numerics study of it (`run --numerics`)."""
    cpu_overhead: bool = False
    """A CPU timing run checks the harness's overhead on it by default (its CPU step is short
    enough for the harness's microseconds to show)."""
    unit: str = "samples"
    """What the throughput counts per second: `samples`, or `tokens` where samples have them."""
    per_sample: Callable[[object], int] = field(default=lambda size: 1)
    """Units of throughput in one sample (tokens per sequence); 1 for samples."""
    task: Callable[[object, int, float, str], Task] | None = None
    """(size, seed, noise, device) -> the learnable task the numerics study trains on
    (`bench.workloads.tasks`); None: a pool of the workload's own batches (`tasks.PoolTask`)."""
    batch_sizes: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    """Device -> the batch sizes (in the workload's samples) a timing run sweeps when
    `--batch-sizes` is not given; a device it leaves out takes the MLP's
    (`bench.cases.grid.DEFAULT_BATCH_SIZES`)."""
    numerics: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    """Device -> numerics study settings that differ for this workload from
    `bench.numerics.measure.defaults.PER_DEVICE` (batch sizes in the workload's samples,
    held-out size)."""
    fit_data: Callable[[object, DataShape], object] | None = None
    """(size, a data source's shape) -> the size sized to that data (its vocabulary, its
    classes), for the time-to-quality study; raises ValueError saying why where the model cannot
    be sized to it. None: the model trains on its synthetic batches only. Ask `sized_to`."""
    unsupported_reason: Callable[[], str | None] = field(default=lambda: None)
    """Why no case of this workload can run here (an optional package it needs is missing), or
    None. Asked before anything of the model is built: each case is then an `unsupported` row
    with this reason (`bench.execution.variants.unsupported_reason`)."""

    def __post_init__(self) -> None:
        if self.free_sizes and self.from_sizes is None:
            raise ValueError(f"workload {self.name}: free_sizes needs from_sizes")

    def flags(self) -> dict[str, bool]:
        """How its cases are sized and run, as a card has it (`bench.ground.cards.FLAGS`)."""
        return {name: getattr(self, name) for name in cards.FLAGS}

    def model(self, preset: str, device: str, seed: int = 0) -> nn.Module:
        """The model of `preset` on `device`, initialised from `seed` (`build` at its size)."""
        return self.build(self.size(preset), device, seed)

    def batch(self, preset: str, n: int, device: str, seed: int = 0) -> Batch:
        """A synthetic batch of `n` samples of `preset` on `device`, drawn from `seed`
        (`make_batch` at its size)."""
        return self.make_batch(self.size(preset), n, device, seed)

    def sizes(self, preset: str) -> Sizes:
        """The sizes a case of `preset` carries and its id spells out."""
        return self.sizes_at(self.size(preset))

    def sizes_at(self, size: object) -> Sizes:
        """The sizes of the size object `size`, by name."""
        return Sizes.of(self.named_sizes(size))

    def size_of(self, case: Case) -> object:
        """The size object `case` trains: from its own sizes where the workload's sizes may be
        any (`free_sizes`), else its preset's."""
        if self.free_sizes:
            return self.from_sizes(case.sizes)
        return self.size(case.preset)

    def case(self, model: str, preset: str, sizes: Sizes | None = None, **axes: object) -> Case:
        """A case of this workload at `preset`; `axes` are its other fields. It carries `model`
        (the `--model` value that names it: a user's is the factory's spec, not `name`), the
        sizes (`sizes`, where the workload takes any, else the preset's) and the preset, left
        empty where the sizes say it all (`free_sizes`: the MLP's)."""
        own = sizes if sizes is not None and self.free_sizes else self.sizes(preset)
        return Case(model=model, preset="" if self.free_sizes else preset, sizes=own, **axes)

    def sized_to(self, size: object, data: DataShape) -> object:
        """`size` sized to a real data source's shape; ValueError with the reason where it
        cannot be."""
        if self.fit_data is None:
            raise ValueError(
                f"{self.name} cannot be sized to real data: its workload sets no vocabulary or "
                "classes (it trains on its own synthetic batches)"
            )
        return self.fit_data(size, data)

    def make_task(self, size: object, seed: int, noise: float, device: str) -> Task:
        """The task the numerics study trains this workload on."""
        if self.task is not None:
            return self.task(size, seed, noise, device)
        return PoolTask(
            make=lambda n, batch_seed: self.make_batch(size, n, device, batch_seed), seed=seed
        )

    def structure(self, size: object, device: str) -> structure.Structure:
        """What `bench.workloads.structure.find` finds in this workload's model at `size`, from
        one forward of a batch of one, cached per (workload, size, device). The probe runs on
        the meta device, where it costs nothing, unless the model cannot run there (a value
        read back with `.item()`): then on `device`, once."""
        key = (self.name, size_key(size), device)
        if key not in _STRUCTURES:
            _STRUCTURES[key] = self._probe(size, device)
        return _STRUCTURES[key]

    def _probe(self, size: object, device: str) -> structure.Structure:
        try:
            return self._find_on("meta", size)
        except Exception:  # no meta kernel, a data-dependent branch: probe where it trains
            return self._find_on(device, size)

    def _find_on(self, device: str, size: object) -> structure.Structure:
        model = self.build(size, device, 0)
        inputs, _ = self.make_batch(size, 1, device, 0)
        return structure.find(model, inputs)

    def linears_of(self, size: object) -> dict[str, tuple[int, int]]:
        """Every Linear of the model at `size` by module name, as (in_features, out_features)."""
        if self.linears is not None:
            return self.linears(size)
        return structure.linears(self._shapes(size))

    def fp8_excluded_of(self, size: object) -> dict[str, str]:
        """The Linears a float8 mode leaves in higher precision at `size`, each with why."""
        if self.fp8_excluded is not None:
            return self.fp8_excluded(size)
        return structure.fp8_excluded(self._shapes(size))

    def _shapes(self, size: object) -> nn.Module:
        """The model for its shapes alone: on the meta device, where it costs no memory, unless
        it cannot be built there (a value read back): then on the CPU. Cached per workload and
        size (the workload itself kept with it, so that its id stays its own)."""
        key = (id(self), size_key(size))
        if key not in _SHAPES:
            try:
                with torch.device("meta"):
                    model = self.build(size, "meta", 0)
            except (NotImplementedError, RuntimeError):
                model = self.build(size, "cpu", 0)
            _SHAPES[key] = (self, model)
        return _SHAPES[key][1]

    def blocks_of(self, model: nn.Module, size: object) -> list[nn.Module]:
        """The modules of `model` (as a mode prepared it) that FSDP2 shards one by one."""
        if self.blocks is not None:
            return list(self.blocks(model))
        found = self.structure(size, _device_of(model)).blocks
        return [model.get_submodule(name) for name in found]

    def observed_of(self, model: nn.Module, size: object) -> dict[str, nn.Module]:
        """Name -> module of `model` whose output the numerics study observes, in forward
        order; the last is the one whose output's tensor is the logits (the model itself, under
        its class's name, when found in the module tree)."""
        if self.observed is not None:
            return dict(self.observed(model))
        found = self.structure(size, _device_of(model)).observed
        return {name or type(model).__name__: model.get_submodule(name) for name in found}

    def audited_of(self, size: object, device: str) -> str:
        """The name (as `named_parameters()` gives it) of the parameter the audit follows, in
        this workload's model at `size` (`device`: where to look if not on the meta device)."""
        if self.audited is not None:
            return self.audited(size)
        return self.structure(size, device).audited

    def size(self, preset: str) -> object:
        if preset not in self.presets:
            raise ValueError(
                f"unknown preset {preset!r} of model {self.name}; "
                f"choose from {', '.join(self.presets)}"
            )
        return self.presets[preset]


def from_model(
    name: str,
    model: Callable[[str], nn.Module],
    batch: Callable[[int, str, torch.Generator], Batch],
    loss: Callable[[object, torch.Tensor], torch.Tensor] | None = None,
    *,
    description: str = "",
    blocks: Callable[[nn.Module], list[nn.Module]] | None = None,
    observed: Callable[[nn.Module], dict[str, nn.Module]] | None = None,
    sizes: Mapping[str, int] | None = None,
) -> Workload:
    """A workload (one preset, `default`) from what a training script has: `model(device)`,
    `batch(batch_size, device, generator)` drawing from the seeded `generator`, and
    `loss(output, targets)` on the output as the model returns it (default: mean cross-entropy
    of its logits). The model's structure is found in its module tree
    (`bench.workloads.structure`); `blocks(model)` (the modules to shard) and `observed(model)`
    (name -> module in forward order, the last one's output the logits) replace that search
    where it is wrong. `sizes` names the sizes a case id spells (default `1x1x1`). See
    docs/own-model.md."""

    def make(size: object, batch_size: int, device: str, seed: int) -> Batch:
        # The meta device (counting FLOPs) has no generator and draws nothing.
        meta = torch.device(device).type == "meta"
        gen = None if meta else generator(device, seed)
        return batch(batch_size, device, gen)

    def reduced(out: object, targets: torch.Tensor, reduction: str) -> torch.Tensor:
        if loss is not None:
            if reduction != "mean":
                raise ValueError(f"{name}: its loss is its own; reduction {reduction!r} is not")
            return loss(out, targets)
        return heads.loss(out, targets, reduction)

    return Workload(
        name=name,
        description=description or f"{name}, a user's model",
        presets={"default": None},
        default_preset={"cuda": "default", "cpu": "default"},
        build=lambda size, device, seed: model(device),
        make_batch=make,
        loss=reduced,
        blocks=blocks,
        observed=observed,
        named_sizes=lambda size: sizes or Sizes.unnamed((1, 1, 1)).named(),
    )
