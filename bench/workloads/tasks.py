"""Learnable synthetic tasks for the numerics study's training runs, one kind per workload
(`PrototypeTask`, `MarkovTask`, `PoolTask`; docs/numerics.md), each made on the device from a
seed with a held-out split; step k's batch depends on (seed, k) alone."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import torch

from bench.data.sources import Batch, generator
from bench.workloads import heads

HELDOUT_STREAM = 2**31 - 1
"""Step index reserved for the held-out split; training steps never reach it."""


class Task(Protocol):
    description: str
    """One sentence for the report: what the task is."""

    def sample(self, n: int, stream: int) -> Batch:
        """`n` samples of step `stream` (or of the held-out split, `HELDOUT_STREAM`)."""
        ...

    def true_loss(self, batch: Batch) -> float | None:
        """The mean cross-entropy the task's own process gives `batch`; None where unknown."""
        ...


def _generator(device: str, seed: int, stream: int) -> torch.Generator:
    # One generator per (seed, stream): step k's batch is the same in every mode and run.
    return generator(device, seed, stream)


@dataclass
class PrototypeTask:
    """Each of `classes` classes has a prototype drawn once from N(0, I); a sample of class y is
    `(prototype[y] + noise * N(0, I)) / sqrt(1 + noise**2)`, so inputs have unit variance whatever
    the noise. With noise 2 the classes are well separated in 1024 dimensions: a model that learns
    the task drives the loss down by orders of magnitude, and its gradients shrink with it."""

    features: int
    classes: int
    seed: int = 0
    noise: float = 2.0
    device: str = "cpu"
    _prototypes: torch.Tensor | None = field(default=None, repr=False)

    @property
    def description(self) -> str:
        return (
            f"{self.classes} Gaussian classes in {self.features} dimensions around random "
            f"prototypes, noise {self.noise:g}"
        )

    def prototypes(self) -> torch.Tensor:
        if self._prototypes is None:
            gen = generator(self.device, self.seed)
            self._prototypes = torch.randn(
                self.classes, self.features, generator=gen, device=self.device
            )
        return self._prototypes

    def sample(self, n: int, stream: int) -> Batch:
        protos = self.prototypes()
        gen = _generator(self.device, self.seed, stream)
        y = torch.randint(0, self.classes, (n,), generator=gen, device=self.device)
        eps = torch.randn(n, self.features, generator=gen, device=self.device)
        x = (protos[y] + self.noise * eps) / math.sqrt(1.0 + self.noise**2)
        return x, y

    def true_loss(self, batch: Batch) -> float:
        """The Bayes classifier's cross-entropy: with equal priors, p(c | x) is the softmax over
        classes of -‖x·√(1+noise²) − prototype_c‖² / (2·noise²)."""
        x, y = batch
        scaled = x.float() * math.sqrt(1.0 + self.noise**2)
        logits = -torch.cdist(scaled, self.prototypes()).square() / (2 * self.noise**2)
        return heads.loss(logits, y).item()


@dataclass
class MarkovTask:
    """Sequences from a random sparse Markov chain over the first `states` tokens of the
    vocabulary (at most `STATES`, so that each is seen often enough to be learnt in a thousand
    steps): each has `successors` next tokens, drawn once at random, with probabilities
    softmax(z · 2/noise), z ~ N(0, 1); the first token is uniform. The loss falls towards the
    chain's entropy rate (`true_loss`). Batches are made `CHUNK` steps at a time and cached:
    sampling is sequential in the positions."""

    vocab: int
    context: int
    seed: int = 0
    noise: float = 2.0
    device: str = "cpu"
    successors: int = 4
    CHUNK = 64
    STATES = 4096
    _table: tuple[torch.Tensor, torch.Tensor] | None = field(default=None, repr=False)
    _cache: dict[tuple[int, int], torch.Tensor] = field(default_factory=dict, repr=False)

    @property
    def description(self) -> str:
        return (
            f"sequences of {self.context + 1} tokens from a random sparse Markov chain over "
            f"{self.states} of the {self.vocab} tokens, {self.successors} successors per token, "
            "successor "
            f"probabilities softmax(2·z/{self.noise:g}) with z ~ N(0, 1)"
        )

    @property
    def states(self) -> int:
        return min(self.vocab, self.STATES)

    def table(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(successor ids, their probabilities), each (states, successors)."""
        if self._table is None:
            gen = generator(self.device, self.seed)
            shape = (self.states, self.successors)
            succ = torch.randint(0, self.states, shape, generator=gen, device=self.device)
            z = torch.randn(shape, generator=gen, device=self.device)
            self._table = succ, torch.softmax(z * (2.0 / self.noise), dim=1)
        return self._table

    def _walk(self, n: int, gen: torch.Generator) -> torch.Tensor:
        succ, probs = self.table()
        cum = probs.cumsum(1)
        tokens = torch.empty(n, self.context + 1, dtype=torch.long, device=self.device)
        tokens[:, 0] = torch.randint(0, self.states, (n,), generator=gen, device=self.device)
        u = torch.rand(n, self.context, generator=gen, device=self.device)
        last = self.successors - 1
        for t in range(self.context):
            cur = tokens[:, t]
            pick = (u[:, t : t + 1] > cum[cur]).sum(1).clamp_(max=last)
            tokens[:, t + 1] = succ[cur, pick]
        return tokens

    def sample(self, n: int, stream: int) -> Batch:
        if stream == HELDOUT_STREAM:
            tokens = self._walk(n, _generator(self.device, self.seed, stream))
        else:
            chunk, i = divmod(stream, self.CHUNK)
            key = (n, chunk)
            if key not in self._cache:
                self._cache.clear()  # one chunk at a time: steps come in order
                gen = _generator(self.device, self.seed, chunk)
                self._cache[key] = self._walk(n * self.CHUNK, gen)
            tokens = self._cache[key][i * n : (i + 1) * n]
        return tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()

    def true_loss(self, batch: Batch) -> float:
        """−log P(next | current) under the chain, averaged over every position of the batch."""
        x, y = batch
        succ, probs = self.table()
        p = ((succ[x] == y.unsqueeze(-1)) * probs[x]).sum(-1)
        return (-p.log()).mean().item()


@dataclass
class PoolTask:
    """A workload's own synthetic batches (`Workload.make_batch`), `pool` of them cycled: a model
    can fit them by heart, so the training loss falls, but nothing about the held-out split (a
    batch outside the pool) is learnable, and the true loss is unknown."""

    make: Callable[[int, int], Batch]
    """(batch size, seed) -> a batch."""
    seed: int = 0
    pool: int = 16

    @property
    def description(self) -> str:
        return (
            f"the workload's own synthetic batches, a pool of {self.pool} cycled (learnable by "
            "heart; the held-out batch is a new draw, so its loss measures fitting, not learning)"
        )

    def sample(self, n: int, stream: int) -> Batch:
        which = stream if stream == HELDOUT_STREAM else stream % self.pool
        return self.make(n, self.seed * 1_000_003 + which + 1)

    def true_loss(self, batch: Batch) -> None:
        return None
