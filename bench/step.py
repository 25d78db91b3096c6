"""The one train step every mode runs, split into its three timed phases.

Each mode differs only in the `enabled=` / `dtype=` arguments it passes (nanoGPT's pattern):
autocast is off for fp32 and tf32, and GradScaler is a no-op unless the mode scales the loss, so
`scaler.scale(loss)` returns the loss and `scaler.step(opt)` calls `opt.step()` unchanged.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

import torch
from torch import nn

from bench.case import Case
from bench.model import MLP, make_batch
from bench.modes import MODES, Mode


@dataclass
class TrainState:
    """Everything one case trains: model, optimizer, scaler and a fixed synthetic batch."""

    case: Case
    mode: Mode
    model: MLP
    optimizer: torch.optim.Optimizer
    scaler: torch.amp.GradScaler
    loss_fn: nn.Module
    x: torch.Tensor
    y: torch.Tensor


def build(case: Case) -> TrainState:
    """Model, Adam (case.lr), scaler and a synthetic batch for one case, seeded."""
    torch.manual_seed(case.seed)
    mode = MODES[case.mode]
    model = MLP(case.size, device=case.device)
    if case.init_scale != 1.0:
        with torch.no_grad():
            for p in model.parameters():
                p.mul_(case.init_scale)
    if case.optimizer == "fused":
        optimizer = torch.optim.Adam(model.parameters(), lr=case.lr, fused=True)
    else:
        optimizer = torch.optim.Adam(model.parameters(), lr=case.lr, foreach=True)
    scaler = torch.amp.GradScaler(case.device, enabled=mode.scale_loss)
    x, y = make_batch(case.size, case.batch_size, case.seed, case.device)
    loss_fn = nn.CrossEntropyLoss(reduction=case.reduction)
    return TrainState(case, mode, model, optimizer, scaler, loss_fn, x, y)


@contextlib.contextmanager
def autocast(s: TrainState) -> Iterator[None]:
    """The mode's autocast region (a no-op for fp32 and tf32)."""
    dtype = s.mode.autocast_dtype
    with torch.autocast(s.case.device, dtype=dtype or torch.float32, enabled=dtype is not None):
        yield


def forward(s: TrainState) -> tuple[torch.Tensor, torch.Tensor]:
    """Forward pass and loss under the mode's autocast; returns (logits, loss).

    Autocast wraps the forward and the loss only, as its docstring asks: backward ops then run in
    the dtype autocast chose for the matching forward ops.
    """
    with autocast(s):
        logits = s.model(s.x)
        loss = s.loss_fn(logits, s.y)
        if s.case.loss_mult != 1.0:
            loss = loss * s.case.loss_mult
    return logits, loss


def backward(s: TrainState, loss: torch.Tensor) -> None:
    # scale() multiplies by the current scale on the device: no host sync.
    s.scaler.scale(loss).backward()


def optimizer_step(s: TrainState) -> None:
    # With a scaler and a foreach Adam, scaler.step() reads found_inf on the host: a device sync
    # that real training pays too, so it stays in the measured phase. Fused Adam takes the scale
    # and found_inf as tensors and skips that sync.
    s.scaler.step(s.optimizer)
    s.scaler.update()
    s.optimizer.zero_grad(set_to_none=True)


def train_step(s: TrainState) -> torch.Tensor:
    """One whole step (forward, backward, optimizer); returns the loss tensor, unsynchronized."""
    _, loss = forward(s)
    backward(s, loss)
    optimizer_step(s)
    return loss
