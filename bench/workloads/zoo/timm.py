"""timm's models by name: `timm:NAME`, `timm.create_model(NAME, pretrained=False)`."""

from __future__ import annotations

import torch

from bench.faults import UsageError
from bench.workloads.base import Workload
from bench.workloads.zoo import common


def workload(model_name: str) -> Workload:
    """`timm:NAME`: `timm.create_model(NAME, pretrained=False)`, its input size from the
    model's own config (`pretrained_cfg["input_size"]`), 1000 classes; `tiny` at 64×64 with 10
    classes (a ViT or Swin is told the image size)."""
    name = f"timm:{model_name}"
    if not common.importable("timm"):
        return common.missing(name, "timm")
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

    return common.make(
        name,
        description=f"timm's {model_name}, random weights, image classification",
        presets=common.image_presets(side, classes, sized),
        default_preset={"cuda": "default", "cpu": "tiny"},
        construct=lambda size: timm.create_model(model_name, pretrained=False, **size.kwargs),
    )
