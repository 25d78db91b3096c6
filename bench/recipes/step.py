"""The one train step every mode runs, split into its three timed phases.

A case's plan (`bench.recipes.plan.Plan`, resolved once by the job) holds its workload, which
gives the model, its synthetic batch and its loss, and its mode's recipe
(`bench.recipes.modes.Mode`), which decides everything that differs between modes: the
model's preparation, the precision context of each phase, the scaler and the optimizer.
GradScaler is a no-op unless the mode scales the loss, so `scaler.scale(loss)` returns the loss
and `scaler.step(opt)` calls `opt.step()` unchanged (nanoGPT's pattern).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from bench.cases.case import Case
from bench.recipes.modes import Mode
from bench.recipes.plan import Plan


@dataclass
class TrainState:
    """Everything one case trains: model, optimizer, scaler and the current batch.

    Its plan's mode is the recipe the state was built with and is never changed; `as_mode` gives
    a second state over the same model and batch for another mode (the numerics census compares
    modes on the same weights)."""

    plan: Plan
    model: nn.Module
    """The workload's model as the mode prepared it (a float8 recipe's Linears converted),
    outside any DDP or FSDP2 wrapper."""
    optimizer: torch.optim.Optimizer
    scaler: torch.amp.GradScaler
    x: torch.Tensor
    """The batch's inputs (float features, or int64 token ids)."""
    y: torch.Tensor
    """The batch's targets."""
    compute: Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]
    """(x, y) -> (output, loss): the model and the loss, the part an execution variant may
    compile (`bench.execution.variants`)."""
    autocast_cache: bool = True
    """Autocast's cache of weight casts; off inside a CUDA graph capture."""
    wrapper: nn.Module | None = None
    """The DDP or FSDP2 module that `compute` calls in a distributed case
    (`bench.execution.parallel`); `model` is the workload's model inside it."""

    @property
    def case(self) -> Case:
        return self.plan.case

    @property
    def mode(self) -> Mode:
        return self.plan.mode

    def as_mode(self, mode: Mode, scaler: torch.amp.GradScaler | None = None) -> TrainState:
        """A view of this state under another recipe, sharing model, optimizer and batch; its
        scaler is `scaler`, or a fresh one of that mode."""
        return dataclasses.replace(
            self,
            plan=self.plan.with_mode(mode),
            scaler=scaler if scaler is not None else mode.scaler(self.case.device),
        )


def build(
    plan: Plan,
    *,
    capturable: bool = False,
    wrap: Callable[[nn.Module, Mode], nn.Module] | None = None,
) -> TrainState:
    """The workload's model, optimizer (case.lr), scaler and a synthetic batch for one case's
    plan, seeded.

    The plan's mode may be one the mode table has not (`Plan.with_mode`): the numerics audit
    tries recipes users try that are not modes of the benchmark. `capturable` builds an optimizer
    whose state stays on the device, for a CUDA graph capture of the whole step. `wrap` puts the
    prepared model under DDP or FSDP2 (`bench.execution.parallel.wrap`) before the optimizer sees
    its parameters. Every rank builds the same weights (same seed) and its own batch: the same seed,
    so ranks of a distributed case train on equal batches, which is all a timing needs."""
    # First, before anything draws: a workload whose init uses the global generator (the MLP,
    # through torch's default init) gets the same weights as every run before workloads.
    case, mode, workload, size = plan.case, plan.mode, plan.workload, plan.size
    torch.manual_seed(case.seed)
    model = workload.build(size, case.device, case.seed)
    if case.init_scale != 1.0:
        with torch.no_grad():
            for p in model.parameters():
                p.mul_(case.init_scale)
    model = mode.prepare(model, workload, size)
    net = wrap(model, mode) if wrap is not None else model
    optimizer = mode.optimizer(case.optimizer, model.parameters(), case.lr, capturable=capturable)
    x, y = workload.make_batch(size, case.batch_size, case.device, case.seed)

    def compute(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        output = net(mode.cast_input(x))
        loss = workload.loss(output, y, case.reduction)
        if case.loss_mult != 1.0:
            loss = loss * case.loss_mult
        return output, loss

    scaler = mode.scaler(case.device)
    wrapper = net if wrap is not None else None
    return TrainState(plan, model, optimizer, scaler, x, y, compute, wrapper=wrapper)


def forward(s: TrainState) -> tuple[torch.Tensor, torch.Tensor]:
    """Forward pass and loss in the mode's forward context; returns (output, loss)."""
    with s.mode.context(s.case.device, forward=True, cache=s.autocast_cache):
        return s.compute(s.x, s.y)


def backward(s: TrainState, loss: torch.Tensor) -> None:
    # scale() multiplies by the current scale on the device: no host sync.
    with s.mode.context(s.case.device):
        s.scaler.scale(loss).backward()


def optimizer_update(s: TrainState) -> None:
    """GradScaler's unscale and inf check, Adam's step (skipped after an overflow), the scale's
    update. With a scaler and a foreach Adam, scaler.step() reads found_inf on the host: a device
    sync that real training pays too, so it stays in the measured phase. Fused Adam takes the
    scale and found_inf as tensors and skips that sync."""
    s.scaler.step(s.optimizer)
    s.scaler.update()


def optimizer_step(s: TrainState) -> None:
    """The optimizer phase: the update, then the gradients dropped for the next backward."""
    optimizer_update(s)
    s.optimizer.zero_grad(set_to_none=True)


def train_step(s: TrainState) -> torch.Tensor:
    """One whole step (forward, backward, optimizer); returns the loss tensor, unsynchronized."""
    _, loss = forward(s)
    backward(s, loss)
    optimizer_step(s)
    return loss
