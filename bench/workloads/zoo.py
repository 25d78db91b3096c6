"""Real models by name from the three zoos people train from, with random weights from their
configs: `hf:NAME` (Hugging Face transformers, `bench.workloads.hf`), `timm:NAME` and
`torchvision:NAME`. Nothing is downloaded: timm's and torchvision's models are made with
`pretrained=False` / `weights=None`, transformers' from a config class (or a local config.json).

Each zoo model is a `Workload` like the built-in ones: its head decides the task, hence the
batch, the labels and the loss (`bench.workloads.heads`); its blocks, observed points, audited
weight and float8 exclusions are found in its module tree (`bench.workloads.structure`). Every
name has a `tiny` preset (for the CPU and the tests) and the model's real size.

A zoo whose package is missing still parses: every case of its models is an `unsupported` row
that says how to install it (the `[zoo]` extra), as torchvision's ResNet-50 does. A name the
installed zoo does not know is bad input: one line, exit status 2.

Dropout is off in every zoo model (its probabilities set to zero): a benchmark step should do the
same work every time, and dropout's masks would make two modes' numerics differ by more than
their precision (the built-in GPT has none either).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from bench.data.sources import DataShape
from bench.faults import UsageError
from bench.workloads import heads, structure, tasks
from bench.workloads.base import Workload

PREFIXES = ("hf", "timm", "torchvision")
"""The zoos, as the part of a `--model` value before its first colon."""
INSTALL = "pip install -e '.[zoo]'"

TINY_IMAGE = 64
"""The tiny presets' image side: every CNN in the zoos downsamples by 32 at most, so 64 leaves
a 2×2 map at the end; a ViT is told this size."""
TINY_CLASSES = 10


def is_zoo(name: str) -> bool:
    return name.partition(":")[0] in PREFIXES and bool(name.partition(":")[2])


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

    @functools.cache
    def shapes(size: ZooSize) -> nn.Module:
        """The model for its shapes alone: on the meta device, where it costs no memory, unless
        its constructor reads a value back (torchvision's RegNets compute their widths with
        `.tolist()`): then on the CPU."""
        try:
            return build(size, "meta", 0)
        except (NotImplementedError, RuntimeError):
            return build(size, "cpu", 0)

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
        linears=lambda size: structure.linears(shapes(size)),
        fp8_excluded=lambda size: structure.fp8_excluded(shapes(size)),
        dims=_dims,
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


def _dims(size: ZooSize) -> tuple[int, int, int]:
    """The three sizes a case id spells out: sequence × vocabulary × classes for text (0 where a
    task has none), image side × channels × classes for images."""
    s = size.shape
    if s.text:
        return s.seq, s.vocab, max(s.classes, 1)
    return s.image, s.channels, s.classes


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
        dims=lambda size: (1, 1, 1),
        unsupported_reason=lambda: reason,
    )


def _imports(module: str) -> bool:
    try:
        importlib.import_module(module)
    except Exception:  # not installed, or broken against this torch: either way not usable
        return False
    return True


def _image_presets(
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


def timm_workload(model_name: str) -> Workload:
    """`timm:NAME`: `timm.create_model(NAME, pretrained=False)`, its input size from the
    model's own config (`pretrained_cfg["input_size"]`), 1000 classes; `tiny` at 64×64 with 10
    classes (a ViT or Swin is told the image size)."""
    name = f"timm:{model_name}"
    if not _imports("timm"):
        return missing(name, "timm")
    import timm

    if not timm.is_model(model_name):
        raise UsageError(f"--model {name}: timm has no model {model_name!r} (timm.list_models())")
    with torch.device("meta"):
        probe = timm.create_model(model_name, pretrained=False)
    side = int(probe.pretrained_cfg.get("input_size", (3, 224, 224))[-1])
    classes = int(getattr(probe, "num_classes", 1000) or 1000)

    def sized(side: int) -> dict[str, object]:
        try:
            with torch.device("meta"):
                timm.create_model(model_name, pretrained=False, img_size=side)
        except TypeError:  # a CNN: any input size it can downsample
            return {}
        return {"img_size": side}

    return make(
        name,
        description=f"timm's {model_name}, random weights, image classification",
        presets=_image_presets(side, classes, sized),
        default_preset={"cuda": "default", "cpu": "tiny"},
        construct=lambda size: timm.create_model(model_name, pretrained=False, **size.kwargs),
    )


def torchvision_workload(model_name: str) -> Workload:
    """`torchvision:NAME`: `torchvision.models.get_model(NAME, weights=None)`, a classification
    model, at the crop size its weights' transforms name (224 for most; read from torchvision's
    metadata, nothing downloaded), 1000 classes; `tiny` at 64×64 with 10 classes (a ViT is told
    the image size)."""
    name = f"torchvision:{model_name}"
    if not _imports("torchvision.models"):
        return missing(name, "torchvision")
    import torchvision

    known = torchvision.models.list_models(module=torchvision.models)
    if model_name not in known:
        raise UsageError(
            f"--model {name}: not one of torchvision's classification models "
            "(torchvision.models.list_models(module=torchvision.models))"
        )
    side = 224
    try:
        weights = torchvision.models.get_model_weights(model_name)
        side = int(next(iter(weights)).transforms().crop_size[0])
    except Exception:  # no weights enum or no crop size: torchvision's usual 224
        pass

    def sized(side: int) -> dict[str, object]:
        # Only the vision transformers fix their input size; other builders would pass an
        # unknown keyword on to a module that does not take it.
        return {"image_size": side} if model_name.startswith("vit_") else {}

    return make(
        name,
        description=f"torchvision's {model_name}, random weights, image classification",
        presets=_image_presets(side, 1000, sized),
        default_preset={"cuda": "default", "cpu": "tiny"},
        construct=lambda size: torchvision.models.get_model(
            model_name, weights=None, **size.kwargs
        ),
    )


def get(name: str) -> Workload:
    """The workload of a zoo model named `PREFIX:NAME`."""
    prefix, _, rest = name.partition(":")
    if prefix == "hf":
        from bench.workloads import hf

        return hf.workload(rest)
    if prefix == "timm":
        return timm_workload(rest)
    return torchvision_workload(rest)
