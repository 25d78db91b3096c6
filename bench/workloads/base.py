"""What a workload is: everything the harness needs from a model, and nothing about precision.

A workload builds its model on a device for a named size preset, makes a deterministic synthetic
batch on the device (nothing is downloaded), computes its loss, names its throughput unit, the
modules FSDP2 shards one by one, the modules the numerics study observes, and which Linears a
float8 recipe may convert (each one it leaves out with the reason). The precision recipe (a
mode), the execution variant and the parallelism are applied to it by the harness, the same way
for every workload.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import torch
from torch import nn

from bench.workloads.tasks import PoolTask, Task

Batch = tuple[torch.Tensor, torch.Tensor]
"""(inputs, targets), both on the case's device."""


@dataclass(frozen=True, kw_only=True)
class Workload:
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
    loss: Callable[[torch.Tensor, torch.Tensor, str], torch.Tensor]
    """(output, targets, reduction) -> the loss (`mean`, or `sum` for the numerics' stress)."""
    linears: Callable[[object], dict[str, tuple[int, int]]]
    """size -> every Linear by module name, as (in_features, out_features), in forward order."""
    fp8_excluded: Callable[[object], dict[str, str]]
    """size -> the Linears a float8 recipe must leave in higher precision, each with why (the
    recipe's own size thresholds apply to the rest: `bench.recipes.fp8.plan`)."""
    blocks: Callable[[nn.Module], list[nn.Module]]
    """The modules FSDP2 shards one by one before the root (a transformer's blocks)."""
    observed: Callable[[nn.Module], dict[str, nn.Module]]
    """Module name -> module whose output the numerics study observes, in forward order."""
    dims: Callable[[object], tuple[int, int, int]]
    """Three sizes a case id spells out (`input x hidden x classes` for the MLP)."""
    unit: str = "samples"
    """What the throughput counts per second: `samples`, or `tokens` where samples have them."""
    per_sample: Callable[[object], int] = field(default=lambda size: 1)
    """Units of throughput in one sample (tokens per sequence); 1 for samples."""
    task: Callable[[object, int, float, str], Task] | None = None
    """(size, seed, noise, device) -> the learnable task the numerics study trains on
    (`bench.workloads.tasks`); None: a pool of the workload's own batches (`tasks.PoolTask`)."""
    numerics: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    """Device -> numerics study settings that differ for this workload from
    `bench.numerics.defaults.PER_DEVICE` (batch sizes in the workload's samples, held-out size)."""
    unsupported_reason: Callable[[], str | None] = field(default=lambda: None)
    """Why no case of this workload can run here (an optional package it needs is missing), or
    None. Asked before anything of the model is built: each case is then an `unsupported` row
    with this reason (`bench.execution.variants.unsupported_reason`)."""

    def make_task(self, size: object, seed: int, noise: float, device: str) -> Task:
        """The task the numerics study trains this workload on."""
        if self.task is not None:
            return self.task(size, seed, noise, device)
        return PoolTask(
            make=lambda n, batch_seed: self.make_batch(size, n, device, batch_seed), seed=seed
        )

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
    loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
    *,
    description: str = "",
) -> Workload:
    """A workload from the three things a training script already has: `model(device)` builds
    the model on a device, `batch(batch_size, device, generator)` makes a synthetic batch on it
    (draw from `generator`, which ampbench seeds), and `loss(output, targets)` (default: mean
    cross-entropy). It has one preset, `default`, and no Linear that float8 must leave out
    beyond its recipe's size rule; FSDP2 shards its top-level children.

    A case id spells out three sizes; this workload's are 1 × 1 × 1, and the model's spec and
    its preset say what it is."""

    def linears(size: object) -> dict[str, tuple[int, int]]:
        with torch.device("meta"):
            built = model("meta")
        return {
            n: (m.in_features, m.out_features)
            for n, m in built.named_modules()
            if isinstance(m, nn.Linear)
        }

    def make(size: object, batch_size: int, device: str, seed: int) -> Batch:
        # The meta device (counting FLOPs) has no generator and draws nothing.
        meta = torch.device(device).type == "meta"
        gen = None if meta else torch.Generator(device=device).manual_seed(seed)
        return batch(batch_size, device, gen)

    def reduced(out: torch.Tensor, targets: torch.Tensor, reduction: str) -> torch.Tensor:
        if loss is not None:
            if reduction != "mean":
                raise ValueError(f"{name}: its loss is its own; reduction {reduction!r} is not")
            return loss(out, targets)
        return torch.nn.functional.cross_entropy(out, targets, reduction=reduction)

    return Workload(
        name=name,
        description=description or f"{name}, a user's model",
        presets={"default": None},
        default_preset={"cuda": "default", "cpu": "default"},
        build=lambda size, device, seed: model(device),
        make_batch=make,
        loss=reduced,
        linears=linears,
        fp8_excluded=lambda size: {},
        blocks=lambda m: list(m.children()),
        observed=lambda m: dict(m.named_children()),
        dims=lambda size: (1, 1, 1),
    )
