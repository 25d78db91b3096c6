"""What a model's head asks of a training step: its synthetic batch and its loss, per task
(`TASKS`; docs/own-model.md describes each). Batches are drawn on the device from a seeded
generator; losses read the logits (`bench.workloads.outputs`)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from bench.data.sources import generator
from bench.workloads import outputs

IGNORE = -100
"""The label cross-entropy skips (`ignore_index`), as transformers marks unmasked positions."""
MASK_SHARE = 0.15
"""The share of positions a masked-LM batch masks (BERT's)."""

TASKS = ("causal-lm", "masked-lm", "seq2seq-lm", "seq-cls", "image-cls")
"""The heads ampbench can feed, in the order a model's default task is looked for."""


@dataclass(frozen=True, kw_only=True)
class Shape:
    """The sizes a task's batch needs."""

    task: str
    seq: int = 0
    """Tokens per sequence (text tasks)."""
    vocab: int = 0
    """Vocabulary size: token ids are drawn from [0, vocab)."""
    pad: int | None = None
    """The padding id, never drawn."""
    classes: int = 0
    """Labels of a classification head."""
    image: int = 0
    """Image side (image tasks)."""
    channels: int = 3

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise ValueError(f"unknown task {self.task!r}; choose from {', '.join(TASKS)}")

    @property
    def text(self) -> bool:
        return self.task != "image-cls"


def _tokens(shape: Shape, rows: int, cols: int, device: torch.device, gen) -> torch.Tensor:
    """Uniform token ids that skip the padding id: drawn from one id fewer, then shifted past
    it."""
    if device.type == "meta":
        return torch.empty(rows, cols, dtype=torch.long, device=device)
    high = shape.vocab - (shape.pad is not None and 0 <= shape.pad < shape.vocab)
    ids = torch.randint(0, high, (rows, cols), generator=gen, device=device)
    if shape.pad is not None and 0 <= shape.pad < shape.vocab:
        ids += (ids >= shape.pad).long()
    return ids


def _labels(shape: Shape, n: int, device: torch.device, gen) -> torch.Tensor:
    """One uniform class label per sample (none drawn on the meta device)."""
    if device.type == "meta":
        return torch.empty(n, dtype=torch.long, device=device)
    return torch.randint(0, shape.classes, (n,), generator=gen, device=device)


def make_batch(
    shape: Shape, batch_size: int, device: torch.device | str, seed: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """(inputs, targets) of `batch_size` samples for `shape.task`, made on the device from
    `seed`; on the meta device (counting FLOPs) shapes without values."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size!r}")
    device = torch.device(device)
    meta = device.type == "meta"
    gen = None if meta else generator(device, seed)
    if shape.task == "image-cls":
        size = (batch_size, shape.channels, shape.image, shape.image)
        images = (
            torch.empty(size, device=device)
            if meta
            else torch.randn(size, generator=gen, device=device)
        )
        labels = _labels(shape, batch_size, device, gen)
        return images.contiguous(memory_format=torch.channels_last), labels
    if shape.task == "causal-lm":
        ids = _tokens(shape, batch_size, shape.seq + 1, device, gen)
        return ids[:, :-1].contiguous(), ids[:, 1:].contiguous()
    ids = _tokens(shape, batch_size, shape.seq, device, gen)
    if shape.task == "seq2seq-lm":
        return ids, ids.clone()
    if shape.task == "seq-cls":
        return ids, _labels(shape, batch_size, device, gen)
    # masked-lm
    if meta:
        return ids, torch.empty_like(ids)
    masked = torch.rand(ids.shape, generator=gen, device=device) < MASK_SHARE
    masked[:, 0] = True  # every sequence predicts something, however short
    inputs = ids.masked_fill(masked, shape.vocab - 1)
    return inputs, ids.masked_fill(~masked, IGNORE)


def loss(output: object, targets: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """Cross-entropy of the output's logits against `targets`, over every position of a
    sequence output ((batch, seq, vocab) logits are flattened to rows), skipping `IGNORE`: the
    one cross-entropy of ampbench, every built-in workload's loss, a zoo model's and a user's
    by default (`from_model`)."""
    logits = outputs.tensor(output)
    if logits.ndim > 2:
        logits, targets = logits.flatten(0, -2), targets.flatten()
    return F.cross_entropy(logits, targets, ignore_index=IGNORE, reduction=reduction)


class EncoderDecoderLM(nn.Module):
    """An encoder-decoder LM trained on one tensor of token ids: the decoder reads the input
    shifted right by one (its start token first) and predicts the input. The model inside is
    the Hugging Face model as `from_config` built it, under `model`."""

    def __init__(self, model: nn.Module, start: int) -> None:
        super().__init__()
        self.model = model
        self.start = start

    def forward(self, ids: torch.Tensor) -> object:
        start = ids.new_full((ids.shape[0], 1), self.start)
        decoder_ids = torch.cat([start, ids[:, :-1]], dim=1)
        return self.model(input_ids=ids, decoder_input_ids=decoder_ids)
