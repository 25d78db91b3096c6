"""The one train step every mode and every study runs, in its three timed phases, on a state built
from a plan (`build`). GradScaler is a no-op unless the mode scales the loss (nanoGPT's pattern);
where studies differ is the plan's `StepOptions`."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch
from torch import nn

from bench.cases.case import Case
from bench.modes.mode import Mode
from bench.plan.plan import HARNESS, Plan, StepOptions
from bench.workloads import heads, outputs

Observer = Callable[[str, torch.Tensor], None]
"""A study's look inside the step (`TrainState.observe`), called with the phase just done and the
loss: `forward` (the loss's graph whole, nothing run backward yet) and `backward` (the gradients in
`.grad`, still scaled). Called between the phases; only untimed studies set one (it may sync)."""


@dataclass
class TrainState:
    """Everything one case trains: model, optimizer, scaler and the current batch. Its plan's mode
    is never changed; `as_mode` gives a second state over the same model and batch for another."""

    plan: Plan
    model: nn.Module
    """The workload's model as the mode prepared it (a float8 mode's Linears converted),
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
    observe: Observer | None = None
    """What the step shows its phases to (the numerics audit's hooks); None: nothing."""

    @property
    def options(self) -> StepOptions:
        """How this state's step differs from the harness's: its plan's."""
        return self.plan.step_options

    @property
    def case(self) -> Case:
        return self.plan.case

    @property
    def mode(self) -> Mode:
        return self.plan.mode

    def as_mode(self, mode: Mode, scaler: torch.amp.GradScaler | None = None) -> TrainState:
        """A view of this state under another mode, sharing model, optimizer and batch; its
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
    """The workload's model, optimizer (the case's row at case.lr, the step options' betas and
    weight decay), scaler and a synthetic batch for one plan, seeded: the only maker of a train
    state. `capturable`: an optimizer whose state stays on the device (a CUDA graph capture). `wrap`
    puts the prepared model under DDP or FSDP2 (`bench.execution.parallel.wrap`) before the
    optimizer sees it. Every rank builds the same weights and batch (same seed)."""
    # First, before anything draws: a workload whose init uses the global generator (the MLP,
    # through torch's default init) gets weights that depend on the case's seed alone.
    case, mode, workload, size = plan.case, plan.mode, plan.workload, plan.size
    options = plan.step_options
    torch.manual_seed(case.seed)
    model = workload.build(size, case.device, case.seed)
    if case.init_scale != 1.0:
        with torch.no_grad():
            for p in model.parameters():
                p.mul_(case.init_scale)
    model = mode.prepare(model, workload, size)
    net = wrap(model, mode) if wrap is not None else model
    optimizer = mode.optimizer(
        case.optimizer,
        model.parameters(),
        case.lr,
        betas=options.betas,
        weight_decay=options.weight_decay,
        capturable=capturable,
    )
    x, y = workload.make_batch(size, case.batch_size, case.device, case.seed)

    def compute(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        output = net(mode.cast_input(x))
        loss = workload.loss(output, y, case.reduction)
        if case.loss_mult != 1.0:
            loss = loss * case.loss_mult
        return output, loss

    scaler = mode.scaler(case.device)
    wrapper = net if wrap is not None else None
    state = TrainState(plan, model, optimizer, scaler, x, y, compute, wrapper=wrapper)
    if options != HARNESS:  # the harness's leaves the model in the mode its workload built
        model.train(options.dropout)
    return state


def forward(s: TrainState) -> tuple[torch.Tensor, torch.Tensor]:
    """Forward pass and loss in the mode's forward context; returns (output, loss)."""
    with s.mode.context(s.case.device, forward=True, cache=s.autocast_cache):
        return s.compute(s.x, s.y)


def backward(s: TrainState, loss: torch.Tensor) -> None:
    # scale() multiplies by the current scale on the device: no host sync.
    with s.mode.context(s.case.device):
        s.scaler.scale(loss).backward()


def clip(s: TrainState) -> None:
    """The options' clip of the gradients' global norm, after unscaling them where the options
    say so. Nothing without a clip. `unscale_` and `clip_grad_norm_` stay on the device."""
    if s.options.grad_clip <= 0:
        return
    if s.options.unscale_before_clip:
        s.scaler.unscale_(s.optimizer)  # clip the true gradients, not scaled ones
    params = [p for p in s.model.parameters() if p.requires_grad]
    nn.utils.clip_grad_norm_(params, s.options.grad_clip)


def optimizer_update(s: TrainState) -> None:
    """The options' clip, then GradScaler's unscale and inf check, Adam's step (skipped after
    an overflow), the scale's update. With a scaler and a foreach Adam, scaler.step() reads
    found_inf on the host: a device sync that real training pays too, so it stays in the
    measured phase. Fused Adam takes the scale and found_inf as tensors and skips that sync."""
    clip(s)
    s.scaler.step(s.optimizer)
    s.scaler.update()


def optimizer_step(s: TrainState) -> None:
    """The optimizer phase: the update, then the gradients dropped for the next backward."""
    optimizer_update(s)
    s.optimizer.zero_grad(set_to_none=True)


def gradients(s: TrainState) -> torch.Tensor:
    """The step's forward and backward, the (scaled) gradients left in `.grad`; returns the loss
    tensor, unsynchronized. The state's observer sees each phase end."""
    _, loss = forward(s)
    if s.observe is not None:
        s.observe("forward", loss)
    backward(s, loss)
    if s.observe is not None:
        s.observe("backward", loss)
    return loss


def train_step(s: TrainState) -> torch.Tensor:
    """One whole step (forward, backward, optimizer); returns the loss tensor, unsynchronized."""
    loss = gradients(s)
    optimizer_step(s)
    return loss


def evaluate(
    s: TrainState,
    batches: Iterable[tuple[torch.Tensor, torch.Tensor]],
    loss: Callable[[torch.Tensor, torch.Tensor, str], torch.Tensor],
) -> tuple[float, float]:
    """Held-out mean loss (`loss`, mean over every prediction) and accuracy (of the last
    dimension's argmax) over `batches`, the forward pass in the mode's context and the model in
    eval mode (dropout off, batch norm on its running statistics), back in the options' mode
    after. Never timed: the sums stay on the device (float64) and are read once, at the end."""
    # loss × predictions, correct predictions, predictions
    sums = torch.zeros(3, dtype=torch.float64, device=s.case.device)
    s.model.eval()
    try:
        with torch.no_grad(), s.mode.context(s.case.device, forward=True):
            for x, y in batches:
                output = outputs.to_float(s.model(s.mode.cast_input(x)))
                # A masked LM's unmasked positions are no predictions: counted out of both sums.
                counted = (y != heads.IGNORE).sum()
                sums[0] += loss(output, y, "mean").double() * counted
                sums[1] += (outputs.tensor(output).argmax(-1) == y).sum()
                sums[2] += counted
    finally:
        s.model.train(s.options.dropout)
    loss_sum, correct, total = sums.tolist()
    return loss_sum / total, correct / total


def skipped_by_scale(scales: torch.Tensor) -> torch.Tensor:
    """Which steps GradScaler skipped, from its scale before the first step and after each (n+1
    values): n flags. After an overflow it skips the step and lowers the scale, after an applied
    step the scale stays or grows, so a step was skipped when the scale fell. A scale that is 0
    or not finite no longer falls, yet no step trains again: at 0 a gradient is 0, which passes
    GradScaler's overflow check (made before unscaling) and unscales to 0 × inf, a NaN update;
    an infinite scale overflows every gradient. A step after which the scale is not a positive
    finite number applied no update of training either."""
    after = scales[1:]
    return (after < scales[:-1]) | ~(torch.isfinite(after) & (after > 0))


class ScaleWatch:
    """Which steps GradScaler skipped (`bench.measure.timing.StepWatch`, by `skipped_by_scale`).
    A mark copies the scale on the device (no sync, as `get_scale()` would); `skipped` reads
    them all at once."""

    def __init__(self, scaler: torch.amp.GradScaler) -> None:
        if not scaler.is_enabled():
            raise ValueError("ScaleWatch needs an enabled GradScaler: a disabled one skips nothing")
        self.scaler = scaler
        self._marks: list[torch.Tensor] = []

    def _scale(self) -> torch.Tensor:
        scale = self.scaler._scale  # private: the device tensor get_scale() would sync on
        if scale is None:  # no step has scaled a loss yet: the initial scale
            return torch.tensor(self.scaler.get_scale())
        return scale.detach().clone()

    def start(self) -> None:
        self._marks = [self._scale()]

    def mark(self) -> None:
        self._marks.append(self._scale())

    def skipped(self) -> list[bool]:
        # After the caller's sync: the copies are there, reading them waits for nothing.
        scales = torch.tensor([float(v) for v in self._marks], dtype=torch.float64)
        self._marks = self._marks[-1:]
        return skipped_by_scale(scales).tolist()

    def stuck(self) -> str | None:
        """Why no later step can apply its update (the last scale marked is 0 or not finite),
        or None. Read after the caller's sync."""
        last = float(self._marks[-1]) if self._marks else 1.0
        if last > 0 and math.isfinite(last):
            return None
        return f"GradScaler's scale is {last:g}: no step can train from here"


def watch(s: TrainState) -> ScaleWatch | None:
    """The watch of a state whose mode scales the loss; None for one that cannot skip a step."""
    return ScaleWatch(s.scaler) if s.mode.scale_loss and s.scaler.is_enabled() else None
