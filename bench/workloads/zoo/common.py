"""What every zoo model shares: its size (`ZooSize`), the workload made from a constructor
(`make`), the workload of a missing zoo (`missing`, `importable`), the tiny presets, and batch
and study sizes. Imports no zoo: each zoo imports this."""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from bench.cases.sizes import Sizes
from bench.data.sources import DataShape
from bench.workloads import heads, tasks
from bench.workloads.base import Workload

INSTALL = "pip install -e '.[zoo]'"

TINY_IMAGE = 64
"""The tiny presets' image side: every CNN in the zoos downsamples by 32 at most, so 64 leaves
a 2×2 map at the end; a ViT is told this size."""
TINY_CLASSES = 10


@dataclass(frozen=True, kw_only=True)
class ZooSize:
    """One preset of a zoo model: the task's shapes and what the model is built with."""

    preset: str
    shape: heads.Shape
    options: tuple[tuple[str, object], ...] = ()
    """Keyword arguments of the zoo's constructor (timm, torchvision) or config fields
    (transformers) that make this preset, as (name, value) pairs; lists as tuples."""

    @property
    def kwargs(self) -> dict[str, object]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in self.options}


def no_dropout(model: nn.Module) -> nn.Module:
    """Every dropout and stochastic-depth module of `model` set to drop nothing."""
    for module in model.modules():
        if isinstance(module, nn.modules.dropout._DropoutNd):
            module.p = 0.0
        elif hasattr(module, "drop_prob"):  # timm's DropPath
            module.drop_prob = 0.0
        elif type(module).__name__ == "StochasticDepth":  # torchvision's
            module.p = 0.0
    return model


def make(
    name: str,
    *,
    description: str,
    presets: dict[str, ZooSize],
    default_preset: dict[str, str],
    construct: Callable[[ZooSize], nn.Module],
) -> Workload:
    """A zoo model's workload. `construct(size)` makes the model with the zoo's own init, on
    the current default device (the caller sets it, so that a large model is made where it
    trains, and on the meta device when only its shapes are needed)."""

    def build(size: ZooSize, device: torch.device | str, seed: int) -> nn.Module:
        # The zoos initialise from the global generator: seeded here, so a seed gives one model.
        torch.manual_seed(seed)
        with torch.device(device):
            model = construct(size)
        if not size.shape.text:
            # Channels-last, as convolutional networks are trained under mixed precision (the
            # resnet50 workload says why); the images are made channels-last too.
            model = model.to(memory_format=torch.channels_last)
        # In training mode, as a step trains it (transformers leaves a model made from a config
        # in whatever mode its constructor did).
        return no_dropout(model).train()

    def on_data(size: ZooSize, data: DataShape) -> ZooSize:
        """The preset sized to real data: a causal LM's vocabulary (its config's `vocab_size`,
        no padding id), an image classifier's classes (`num_classes`)."""
        if data.task != size.shape.task:
            raise ValueError(f"{name} is a {size.shape.task} model; the data is for {data.task}")
        options = dict(size.options)
        if data.task == "causal-lm":
            if not name.startswith("hf:"):
                raise ValueError(f"{name}: only transformers' causal LMs can be sized to text")
            options["vocab_size"] = data.vocab
            if size.shape.pad is not None:
                options["pad_token_id"] = None
            shape = dataclasses.replace(size.shape, vocab=data.vocab, pad=None)
        else:
            options["num_classes"] = data.classes
            shape = dataclasses.replace(size.shape, classes=data.classes)
        return dataclasses.replace(size, shape=shape, options=tuple(options.items()))

    first = next(iter(presets.values()))
    shape = first.shape
    task = None
    if shape.task == "causal-lm":
        # A learnable next-token task for the numerics study, as the built-in GPT has.
        task = lambda size, seed, noise, device: tasks.MarkovTask(  # noqa: E731
            vocab=size.shape.vocab, context=size.shape.seq, seed=seed, noise=noise, device=device
        )
    return Workload(
        name=name,
        description=description,
        presets=presets,
        default_preset=default_preset,
        build=build,
        make_batch=lambda size, n, device, seed: heads.make_batch(size.shape, n, device, seed),
        loss=heads.loss,
        named_sizes=_sizes,
        unit="tokens" if shape.text else "samples",
        per_sample=lambda size: size.shape.seq if size.shape.text else 1,
        task=task,
        fit_data=on_data,
        batch_sizes=TEXT_BATCHES if shape.text else IMAGE_BATCHES,
        numerics=TEXT_NUMERICS if shape.text else IMAGE_NUMERICS,
    )


# A zoo model's own defaults where the user gives none: the MLP's batch sizes of thousands and
# its study of 8192 held-out samples would not fit a transformer's sequences or 224×224 images.
# On the GPU the model is at its real size (hundreds of sequences or images are already a
# memory limit there: an `oom` row says so); on the CPU at `tiny`, a smoke run of seconds.
TEXT_BATCHES = {"cuda": (8, 32), "cpu": (2, 8)}
"""Sequences per batch (GPT-2's fp32 step at 8 of 1024 tokens on an H200, and its peak memory:
results/20261201T143013Z_NVIDIA-H200_4f46cd0)."""
IMAGE_BATCHES = {"cuda": (32, 128), "cpu": (2, 8)}
"""Images per batch, as an image model's study measures them (`IMAGE_NUMERICS`)."""
TEXT_NUMERICS = {  # the built-in gpt's study too, with its own training sizes
    "cuda": {
        "census_batch_sizes": (2, 8),
        "histogram_batch": 8,
        "conv_batch_sizes": (2, 8),
        "heldout": 32,
        # A traced step copies every weight (163M for GPT-2 124M): every 20th step, not 5th.
        "trace_every": 20,
    },
}
IMAGE_NUMERICS = {  # the built-in resnet50's study too (`bench.workloads.registry`)
    "cuda": {
        "census_batch_sizes": (32, 128),
        "histogram_batch": 128,
        "conv_batch_sizes": (32, 128),
        "heldout": 256,
    },
}


def _sizes(size: ZooSize) -> dict[str, int]:
    """The sizes a case id spells out: sequence × vocabulary × classes for text (1 where a task
    has no classes), image side × channels × classes for images."""
    s = size.shape
    if s.text:
        return {"seq": s.seq, "vocab": s.vocab, "classes": max(s.classes, 1)}
    return {"image": s.image, "channels": s.channels, "classes": s.classes}


def missing(name: str, package: str) -> Workload:
    """The workload of a zoo whose package does not import: it parses, and every case of it is
    an `unsupported` row naming the install line."""
    reason = f"needs {package} ({INSTALL}), which is not installed or does not import"
    nothing = ZooSize(preset="default", shape=heads.Shape(task="image-cls", classes=1, image=1))

    def unbuildable(*args: object) -> nn.Module:
        raise RuntimeError(reason)

    return Workload(
        name=name,
        description=f"{name} ({package} is not installed)",
        presets={"default": nothing, "tiny": nothing},
        default_preset={"cuda": "default", "cpu": "tiny"},
        build=unbuildable,
        make_batch=unbuildable,
        loss=heads.loss,
        linears=lambda size: {},
        fp8_excluded=lambda size: {},
        named_sizes=lambda size: Sizes.unnamed((1, 1, 1)).named(),
        unsupported_reason=lambda: reason,
    )


def importable(module: str) -> bool:
    """Whether a zoo's package `module` imports (each zoo asks before it makes a workload)."""
    try:
        importlib.import_module(module)  # an optional package, by its name
    except Exception:  # not installed, or broken against this torch: either way not usable
        return False
    return True


def image_presets(
    default_side: int, default_classes: int, sized: Callable[[int], dict[str, object]]
) -> dict[str, ZooSize]:
    """`default` (the zoo's own input size and classes) and `tiny` (64×64 images, 10 classes);
    `sized(side)` gives the constructor arguments that set a model's input size, if it has any."""

    def preset(name: str, side: int, classes: int, extra: dict[str, object]) -> ZooSize:
        shape = heads.Shape(task="image-cls", image=side, classes=classes)
        options = {"num_classes": classes, **extra}
        return ZooSize(preset=name, shape=shape, options=tuple(options.items()))

    return {
        "default": preset("default", default_side, default_classes, {}),
        "tiny": preset("tiny", TINY_IMAGE, TINY_CLASSES, sized(TINY_IMAGE)),
    }
