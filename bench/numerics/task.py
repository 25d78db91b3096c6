"""A learnable synthetic classification task for the convergence study.

Each of the `num_classes` classes has a prototype drawn once from N(0, I); a sample of class y is
`(prototype[y] + noise * N(0, I)) / sqrt(1 + noise**2)`, so inputs have unit variance whatever the
noise. With the default noise the classes are well separated in 1024 dimensions: a model that learns
the task drives the loss down by orders of magnitude, and its gradients shrink with it, which is
where float16's range starts to matter. Batches are generated on the device from (seed, step), so a
run is reproducible and nothing is downloaded; the held-out split uses its own stream.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from bench.workloads.mlp import ModelSize

HELDOUT_STREAM = 2**31 - 1
"""Step index reserved for the held-out split; training steps never reach it."""


@dataclass(frozen=True, kw_only=True)
class Task:
    size: ModelSize
    seed: int = 0
    noise: float = 2.0
    """Noise standard deviation relative to the prototypes' (both before normalization)."""
    device: str = "cpu"

    def prototypes(self) -> torch.Tensor:
        gen = torch.Generator(device=self.device).manual_seed(self.seed)
        return torch.randn(
            self.size.num_classes, self.size.input_size, generator=gen, device=self.device
        )

    def sample(
        self, n: int, stream: int, prototypes: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        # One generator per (seed, stream): step k's batch is the same in every mode and run.
        gen = torch.Generator(device=self.device).manual_seed(self.seed * 1_000_003 + stream + 1)
        y = torch.randint(0, self.size.num_classes, (n,), generator=gen, device=self.device)
        eps = torch.randn(n, self.size.input_size, generator=gen, device=self.device)
        x = (prototypes[y] + self.noise * eps) / math.sqrt(1.0 + self.noise**2)
        return x, y
