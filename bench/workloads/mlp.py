"""The MLP from the original question (`WORKLOAD`, registered as `mlp`): its named sizes, its
synthetic data and its loss."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from bench.cases.sizes import Sizes
from bench.data.sources import generator
from bench.ground import cards
from bench.workloads import heads
from bench.workloads.base import Workload
from bench.workloads.tasks import PrototypeTask


@dataclass(frozen=True, kw_only=True)
class ModelSize:
    input_size: int
    hidden_size: int
    num_classes: int

    @classmethod
    def from_sizes(cls, sizes: Sizes) -> ModelSize:
        """The size of the sizes a case carries: input, hidden, classes (its card's names)."""
        return cls(
            input_size=sizes["input"], hidden_size=sizes["hidden"], num_classes=sizes["classes"]
        )

    def named(self) -> dict[str, int]:
        """input × hidden × classes by name, as a case carries them and its id spells them."""
        return {"input": self.input_size, "hidden": self.hidden_size, "classes": self.num_classes}

    def linears(self) -> list[tuple[int, int]]:
        """(in_features, out_features) of fc1, fc2, fc3, in order."""
        return [
            (self.input_size, self.hidden_size),
            (self.hidden_size, self.hidden_size),
            (self.hidden_size, self.num_classes),
        ]


PRESETS: dict[str, ModelSize] = {
    # The question's model. Its input size is not given there; 1024 is ampbench's choice.
    "seed": ModelSize(input_size=1024, hidden_size=16000, num_classes=2000),
    # For the CPU and the tests: the same shape of network, a few thousand parameters.
    "tiny": ModelSize(input_size=32, hidden_size=64, num_classes=10),
}


class MLP(nn.Module):
    def __init__(self, size: ModelSize, device: torch.device | str = "cpu") -> None:
        super().__init__()
        (i1, o1), (i2, o2), (i3, o3) = size.linears()
        # Built directly on the device: initialising 256M float32 weights on the CPU and copying
        # them over takes seconds per case.
        self.fc1 = nn.Linear(i1, o1, device=device)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(i2, o2, device=device)
        self.fc3 = nn.Linear(i3, o3, device=device)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Deliberately no activation between fc2 and fc3: the question's model has none.
        return self.fc3(self.fc2(self.relu(self.fc1(x))))


def make_batch(
    size: ModelSize, batch_size: int, device: torch.device | str, seed: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """A deterministic synthetic batch, generated on the device: standard normal inputs and
    uniformly drawn class labels. Nothing is downloaded. On the meta device (FLOP counting) the
    batch has shapes and no values: meta has no generator to draw from."""
    if torch.device(device).type == "meta":
        x = torch.empty(batch_size, size.input_size, device=device)
        return x, torch.empty(batch_size, dtype=torch.long, device=device)
    gen = generator(device, seed)
    x = torch.randn(batch_size, size.input_size, generator=gen, device=device)
    y = torch.randint(0, size.num_classes, (batch_size,), generator=gen, device=device)
    return x, y


def _mlp_build(size: ModelSize, device: str, seed: int) -> nn.Module:
    # torch's default init draws from the global generator, which `bench.plan.step.build`
    # seeds with the case's seed before this call: the weights depend on the seed alone.
    return MLP(size, device=device)


WORKLOAD = Workload(
    name=cards.MLP.name,
    description="Linear(in, hidden) → ReLU → Linear(hidden, hidden) → Linear(hidden, classes)",
    presets=PRESETS,
    default_preset={"cuda": "seed", "cpu": "tiny"},
    build=_mlp_build,
    make_batch=make_batch,
    loss=heads.loss,
    linears=lambda size: dict(zip(("fc1", "fc2", "fc3"), size.linears(), strict=True)),
    fp8_excluded=lambda size: {},
    # Each Linear is its own FSDP2 unit (a float8 Linear is an nn.Linear too); ReLU has nothing
    # to shard.
    blocks=lambda model: [m for m in model.children() if isinstance(m, nn.Linear)],
    # The ReLU's output too: the gradient of fc1's output is zero wherever it is off.
    observed=lambda model: {
        "fc1": model.fc1,
        "relu": model.relu,
        "fc2": model.fc2,
        "fc3": model.fc3,
    },
    # The question's own parameter: fc1.weight, whose .grad it asked about.
    audited=lambda size: "fc1.weight",
    named_sizes=ModelSize.named,
    # The MLP's size is any three sizes, not only a preset's (`--input-size` and its kin), its
    # cases carry them and an empty preset (their ids are those of every run before
    # workloads), a run may begin with its short numerics study, and its tiny CPU step is where
    # the harness's overhead shows: `cards.MLP` says so for the cases, below torch.
    from_sizes=ModelSize.from_sizes,
    **cards.MLP.flags(),
    task=lambda size, seed, noise, device: PrototypeTask(
        features=size.input_size, classes=size.num_classes, seed=seed, noise=noise, device=device
    ),
)
