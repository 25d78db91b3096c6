"""Your own model through ampbench: a small convolutional network on synthetic 32×32 images.

    ./run_bench.sh --model examples.own_model:workload --preset default --batch-sizes 64,256

`workload()` is the factory ampbench calls (with no arguments). It returns a workload made from
the three things a training script has: the model, a batch, and (optionally) the loss. For presets
of your own, a FLOP-counting meta-device build, or a float8 plan with exclusions, return a
`bench.workloads.base.Workload` directly (docs/own-model.md).
"""

from __future__ import annotations

import torch
from torch import nn

from bench.workloads.base import Workload, from_model

CLASSES = 10


def model(device: str) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1, device=device),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1, device=device),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(64, 128, device=device),
        nn.ReLU(),
        nn.Linear(128, CLASSES, device=device),
    )


def batch(
    batch_size: int, device: str, generator: torch.Generator | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Synthetic images and labels, drawn on the device from ampbench's seeded generator (None
    on the meta device, where ampbench counts FLOPs and nothing is drawn)."""
    if torch.device(device).type == "meta":
        return torch.empty(batch_size, 3, 32, 32, device=device), torch.empty(
            batch_size, dtype=torch.long, device=device
        )
    images = torch.randn(batch_size, 3, 32, 32, generator=generator, device=device)
    labels = torch.randint(0, CLASSES, (batch_size,), generator=generator, device=device)
    return images, labels


def workload() -> Workload:
    return from_model("small-cnn", model, batch, description="a small CNN on 32×32 images")
