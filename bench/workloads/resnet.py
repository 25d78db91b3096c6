"""The ResNet-50 workload: torchvision's `resnet50` in channels-last memory format, its named
sizes, synthetic image batches and loss. Without torchvision its cases are `unsupported` rows;
float8 converts none of its Linears, so its float8 cases are too (docs/own-model.md)."""

from __future__ import annotations

import importlib
import math
from collections import OrderedDict
from dataclasses import dataclass

import torch
from torch import nn

from bench.data.sources import generator
from bench.ground import cards
from bench.workloads import heads
from bench.workloads.base import Workload
from bench.workloads.zoo import common

FEATURES = 2048
"""Width of ResNet-50's pooled features: layer4's 512 channels × the bottleneck's expansion of 4.
The classifier head `fc` maps them to the classes."""
DOWNSAMPLE = 32
"""The stem (a stride-2 convolution and a stride-2 max-pool) and layer2..layer4 (stride 2 each)
halve the image five times: layer4's maps are the image side / 32."""
INSTALL = (
    "needs torchvision (pip install -e '.[vision]'), which is not installed or does not import"
)


@dataclass(frozen=True, kw_only=True)
class ResNetSize:
    image: int
    """Side of the square RGB images, in pixels."""
    classes: int
    """Classes of the classifier head (`fc`'s out_features)."""

    def __post_init__(self) -> None:
        for name in ("image", "classes"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"ResNetSize.{name} must be a positive int, got {value!r}")
        if self.image < DOWNSAMPLE:
            raise ValueError(
                f"ResNetSize.image must be at least {DOWNSAMPLE} (ResNet-50 halves it five "
                f"times), got {self.image}"
            )


PRESETS: dict[str, ResNetSize] = {
    # ImageNet's training shape: 224×224 crops, 1000 classes.
    "resnet50": ResNetSize(image=224, classes=1000),
    # For the CPU and the tests: the same network (23.5M parameters) on small images. 64, not
    # 32: layer4's maps are then 2×2, so a batch of one still gives BatchNorm more than one value
    # per channel (at 32 they are 1×1 and batch 1 cannot train).
    "tiny": ResNetSize(image=64, classes=10),
}


def unsupported_reason() -> str | None:
    """Why no case of this workload can run here (torchvision missing, or built against another
    torch), or None when it can."""
    try:
        importlib.import_module("torchvision.models")
    except Exception:  # not installed, or broken against this torch: either way not usable
        return INSTALL
    return None


def linear_shapes(size: ResNetSize) -> dict[str, tuple[int, int]]:
    """Every Linear of the model by module name, as (in_features, out_features): `fc` alone.
    The convolutions are not Linears (float8 leaves them as they are)."""
    return {"fc": (FEATURES, size.classes)}


def build(size: ResNetSize, device: torch.device | str, seed: int) -> nn.Module:
    """torchvision's `resnet50(weights=None, num_classes=size.classes)` on `device`, initialised
    from `seed` with torchvision's distributions (drawn from a generator on the device, not the
    global one), in channels-last memory format. Made on the meta device as the GPT is; on the
    meta device the model has shapes only."""
    from torchvision.models import resnet50  # optional: `unsupported_reason` says when missing

    device = torch.device(device)
    with torch.device("meta"):
        model = resnet50(weights=None, num_classes=size.classes)
    if device.type != "meta":
        model.to_empty(device=device)
        _init(model, generator(device, seed))
    # 4-D tensors (the convolutions' weights) become NHWC; the others have no such layout.
    return model.to(memory_format=torch.channels_last)


@torch.no_grad()
def _init(model: nn.Module, gen: torch.Generator) -> None:
    for module in model.modules():
        if isinstance(module, nn.Conv2d):
            nn.init.kaiming_normal_(
                module.weight, mode="fan_out", nonlinearity="relu", generator=gen
            )
        elif isinstance(module, nn.BatchNorm2d):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)
            # to_empty left the running mean and variance (and the step count) uninitialised.
            module.reset_running_stats()
        elif isinstance(module, nn.Linear):
            # nn.Linear's reset_parameters, from the generator: kaiming_uniform_(a=√5) gives
            # U(±1/√fan_in), and the bias the same bound.
            nn.init.kaiming_uniform_(module.weight, a=math.sqrt(5), generator=gen)
            bound = 1 / math.sqrt(module.in_features)
            nn.init.uniform_(module.bias, -bound, bound, generator=gen)


def make_batch(
    size: ResNetSize, batch_size: int, device: torch.device | str, seed: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """A deterministic synthetic batch made on the device: (images, labels). Images are
    (batch_size, 3, image, image) standard normal (what normalised ImageNet pixels are, in mean
    and spread) in channels-last format; labels are uniform int64 classes. Nothing is downloaded.
    On the meta device (FLOP counting) the batch has shapes and no values."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size!r}")
    device = torch.device(device)
    shape = (batch_size, 3, size.image, size.image)
    if device.type == "meta":  # meta has no generator, and nothing to draw
        images = torch.empty(shape, device=device, memory_format=torch.channels_last)
        return images, torch.empty(batch_size, dtype=torch.long, device=device)
    gen = generator(device, seed)
    # Drawn NCHW, then laid out NHWC once per case: the step's first convolution then reads the
    # layout the model's weights have, with no transpose inside the timed step.
    images = torch.randn(shape, generator=gen, device=device)
    images = images.contiguous(memory_format=torch.channels_last)
    labels = torch.randint(0, size.classes, (batch_size,), generator=gen, device=device)
    return images, labels


def loss(logits: torch.Tensor, labels: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """Cross-entropy over the classes (`heads.loss`, the one cross-entropy); on autocast's
    float32 list, so it never sums in 16 bits."""
    return heads.loss(logits, labels, reduction)


def blocks(model: nn.Module) -> list[nn.Module]:
    """The modules FSDP2 shards one by one before the root: the 16 bottleneck blocks of layer1
    to layer4 (3, 4, 6, 3), in order. The stem (conv1, bn1) and `fc` stay with the root."""
    return [block for layer in _layers(model) for block in layer]


def observed(model: nn.Module) -> OrderedDict[str, nn.Module]:
    """Module name -> module whose output the numerics study observes, in forward order: the
    stem's output (`maxpool`, after conv1, bn1 and ReLU), each stage's output and the logits
    (`fc`)."""
    out: OrderedDict[str, nn.Module] = OrderedDict(maxpool=model.maxpool)
    for i, layer in enumerate(_layers(model), 1):
        out[f"layer{i}"] = layer
    out["fc"] = model.fc
    return out


def _layers(model: nn.Module) -> list[nn.Module]:
    return [model.layer1, model.layer2, model.layer3, model.layer4]


HEAD_KEPT = (
    "the classifier head stays in higher precision (torchtitan's float8 converter filters out "
    "a model's output Linear: its error goes straight into the logits and the loss)"
)


def fp8_excluded(size: ResNetSize) -> dict[str, str]:
    """The Linears a float8 mode must leave in higher precision, each with why: `fc`, the
    head, as torchtitan leaves a model's output Linear. Where its dimensions are not multiples
    of 16 (1000 classes, or the tiny preset's 10) the reason says that too: torchao's own filter
    would keep it for that alone, since float8 GEMMs need both dimensions divisible by 16."""
    k, n = linear_shapes(size)["fc"]
    why = HEAD_KEPT
    if k % 16 or n % 16:
        why += f"; in {k} × out {n} not both divisible by 16 either (float8 GEMMs need it)"
    return {"fc": why}


WORKLOAD = Workload(
    name=cards.RESNET.name,
    description="torchvision's ResNet-50 on synthetic images, channels-last",
    presets=PRESETS,
    default_preset={"cuda": "resnet50", "cpu": "tiny"},
    build=build,
    make_batch=make_batch,
    loss=loss,
    linears=linear_shapes,
    fp8_excluded=fp8_excluded,
    blocks=blocks,
    observed=observed,
    # Its one Linear, the head, as the audits published before the module-tree search.
    audited=lambda size: "fc.weight",
    named_sizes=lambda size: {"image": size.image, "features": FEATURES, "classes": size.classes},
    # torchvision is an optional extra: without it every case is an `unsupported` row.
    unsupported_reason=unsupported_reason,
    # 224×224 images: the MLP's batch sizes of thousands would not fit, nor its 8192 held-out;
    # a zoo image model's study takes the same.
    numerics=common.IMAGE_NUMERICS,
    **cards.RESNET.flags(),
)
