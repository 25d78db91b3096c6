"""Models written the way users write them, as `--model tests.own_models:FACTORY` factories: a
GPT-like LM whose head is tied to its token embedding and which returns a dict, and a wrapper
that gets logits at every position by calling the inner model's submodules directly."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from bench.workloads.base import Workload, from_model

VOCAB, WIDTH, SEQ = 32, 16, 8


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(WIDTH, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.relu(self.fc(x))


class TiedLM(nn.Module):
    """The hand-written GPT's habit: the head's weight is the token embedding's."""

    def __init__(self, layers: int = 2) -> None:
        super().__init__()
        self.wte = nn.Embedding(VOCAB, WIDTH)
        self.blocks = nn.ModuleList(Block() for _ in range(layers))
        self.lm_head = nn.Linear(WIDTH, VOCAB, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, ids: torch.Tensor) -> dict[str, torch.Tensor]:
        x = self.wte(ids)
        for block in self.blocks:
            x = block(x)
        return {"hidden": x, "logits": self.lm_head(x)}


class Wrapper(nn.Module):
    """Logits at every position by calling the inner model's submodules directly: no hook on
    `inner` itself ever fires."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = TiedLM()

    def forward(self, ids: torch.Tensor) -> tuple[torch.Tensor]:
        x = self.inner.wte(ids)
        for block in self.inner.blocks:
            x = block(x)
        return (self.inner.lm_head(x),)


def tokens(n: int, device: str, gen: torch.Generator | None) -> tuple[torch.Tensor, torch.Tensor]:
    if torch.device(device).type == "meta":
        ids = torch.empty(n, SEQ + 1, dtype=torch.long, device=device)
    else:
        ids = torch.randint(0, VOCAB, (n, SEQ + 1), generator=gen, device=device)
    return ids[:, :-1].contiguous(), ids[:, 1:].contiguous()


def logits_loss(out: dict[str, torch.Tensor], y: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(out["logits"].flatten(0, 1), y.flatten())


def tied_lm() -> Workload:
    return from_model("tied-lm", lambda device: TiedLM().to(device), tokens, logits_loss)


def wrapper() -> Workload:
    # The default loss: cross-entropy of the output's logits (the tuple's first tensor).
    return from_model("wrapper", lambda device: Wrapper().to(device), tokens)
