"""A workload sized to a data source (`fit`), and the batches a run trains and is judged on: step
k's batch of seed s comes from (s, k) alone, so every mode of a seed sees the same batches."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from bench.data import sources
from bench.data.sources import generator
from bench.quality.config import QualityConfig
from bench.workloads.base import Workload

Batch = tuple[torch.Tensor, torch.Tensor]


@dataclass(frozen=True)
class Fitted:
    """The study's model sized to its data."""

    workload: Workload
    size: object
    data: sources.DataSource


def fit(cfg: QualityConfig, workload: Workload) -> Fitted:
    """`workload` (the study's model) at `cfg.preset`, sized to `cfg.data`; ValueError saying why
    where it cannot be (the data's task is not the model's, the model sets no vocabulary)."""
    data = sources.get(cfg.data)
    size = workload.sized_to(workload.size(cfg.preset), data.shape)
    return Fitted(workload, size, data)


def _context(size: object) -> int:
    """Tokens per sequence of a causal LM's size: the built-in GPT's context, a zoo model's
    sequence length."""
    shape = getattr(size, "shape", None)
    return int(shape.seq) if shape is not None else int(size.context)


def _image(size: object) -> tuple[int, int]:
    return int(size.shape.image), int(size.shape.channels)


class Feed:
    """Training batches of one seed, and the held-out split, on one device."""

    def __init__(
        self, fitted: Fitted, batch_size: int, seed: int, device: str, heldout_limit: int = 0
    ) -> None:
        self.fitted, self.batch_size, self.seed, self.device = fitted, batch_size, seed, device
        self.limit = heldout_limit
        self.text = fitted.data.shape.task == "causal-lm"
        self._heldout: list[Batch] | None = None

    def train(self, step: int) -> Batch:
        # A generator per (seed, step) on the device: the same batch for every mode and
        # restart on one kind of device, drawn there without a copy from the host.
        gen = generator(self.device, self.seed, step)
        data, size = self.fitted.data, self.fitted.size
        if self.text:
            return data.train_batch(self.batch_size, _context(size), gen, self.device)
        side, channels = _image(size)
        return data.train_batch(self.batch_size, side, gen, self.device, channels)

    def heldout(self) -> list[Batch]:
        if self._heldout is None:
            data, size = self.fitted.data, self.fitted.size
            if self.text:
                self._heldout = data.heldout(_context(size), self.batch_size, self.device)
            else:
                side, channels = _image(size)
                self._heldout = data.heldout(side, self.batch_size, self.device, channels)
            if self.limit:
                self._heldout = _first(self._heldout, self.limit)
        return self._heldout


def _first(batches: list[Batch], n: int) -> list[Batch]:
    """The first `n` samples of a list of batches."""
    out = []
    for x, y in batches:
        if n <= 0:
            break
        out.append((x[:n], y[:n]))
        n -= len(x)
    return out
