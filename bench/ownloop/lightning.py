"""The probe driven by a Lightning `Trainer` (docs/own-loop.md): `ProbeCallback` marks the
phases from Lightning's hooks and logs the training and validation metrics; `precision()` gives
the driver's mode. Either `lightning` or `pytorch_lightning` serves."""

from __future__ import annotations

import importlib
import math

import torch

from bench.ground import catalog
from bench.modes.mode import MODES
from bench.ownloop import contract, folder
from bench.ownloop.probe import Probe


def _package() -> object:
    for name in ("lightning.pytorch", "pytorch_lightning"):
        try:
            return importlib.import_module(name)  # whichever of its two names is installed
        except ImportError:
            continue
    raise ImportError("bench.ownloop.lightning needs Lightning: pip install 'ampbench[lightning]'")


pl = _package()

PRECISIONS = {
    "float32": "32-true",
    "float16": "16-mixed",
    "bfloat16": "bf16-mixed",
}
"""A mode's low dtype (its card's) -> Lightning's `precision=` for it (None: float32)."""


def precision(default: str = "32-true") -> str:
    """Lightning's `precision=` for the mode the driver asked for (`AMPBENCH_MODE`), with TF32
    switched on for a TF32 mode (Lightning has no precision for it); outside the driver,
    `default`."""
    name = contract.asked()
    if name is None:
        return default
    reason = contract.unsupported_reason(name)
    card = catalog.card(name)
    if reason is None and card.low_dtype == "float16" and not card.scale_loss:
        reason = "Lightning's 16-mixed always runs GradScaler; it has no switch for fp16 without"
    if reason is not None:
        raise ValueError(f"{contract.variable()}={name}: {reason}")
    if MODES[name].tf32:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    return PRECISIONS[card.low_dtype or "float32"]


def _settings(trainer: object, model: torch.nn.Module, scaler: object) -> contract.Settings | None:
    """The mode as the Trainer's precision states it; None for one this does not know (the
    first forward then reads it)."""
    text = str(getattr(trainer, "precision", ""))
    low = {v: k for k, v in PRECISIONS.items()}.get(text)
    if low is None:
        return None
    dtypes = {"float16": torch.float16, "bfloat16": torch.bfloat16}
    on = scaler is not None and scaler.is_enabled()
    tf32 = bool(torch.backends.cuda.matmul.allow_tf32) and next(model.parameters()).is_cuda
    param = next(model.parameters()).dtype
    return contract.Settings(
        autocast_dtype=dtypes.get(low), scaler=on, tf32=tf32, param_dtype=param
    )


class ProbeCallback(pl.Callback):
    """A Lightning `Callback` that measures the Trainer's own run; options are `bench.probe`'s.
    `eval_on_start`: validate on every batch before the first update (see `on_fit_start`)."""

    def __init__(self, *, eval_on_start: bool = True, **options: object) -> None:
        super().__init__()
        self.eval_on_start = eval_on_start
        self.options = options
        self.probe: Probe | None = None
        self._before: dict[str, object] = {}

    def on_fit_start(self, trainer, pl_module) -> None:
        # Whether fp32 learned shows only against a held-out loss taken before the first update
        # (bench.verdicts.training.target). Lightning has no evaluation at the start, but its
        # sanity check runs the validation loop before training, on every batch where
        # num_sanity_val_steps is -1 (inf once parsed); it reads the value after this hook.
        if self.eval_on_start:
            trainer.num_sanity_val_steps = math.inf

    def on_train_start(self, trainer, pl_module) -> None:
        plugin = getattr(trainer, "precision_plugin", None) or trainer.strategy.precision_plugin
        scaler = getattr(plugin, "scaler", None)
        self.probe = Probe(pl_module, trainer.optimizers[0], scaler=scaler, **self.options)
        # Above 0 when resumed from a checkpoint: Lightning restores its loops before this hook.
        self.probe.info[folder.START_STEP] = int(trainer.global_step)
        settings = _settings(trainer, pl_module, scaler)
        if settings is not None:
            self.probe.set_settings(settings)
        if self._before:  # the sanity check's validation: the values before the first update
            self.probe.log(**self._before)

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        if self.probe is None:
            return
        # A probe step is an optimizer step: with gradient accumulation, k batches.
        if batch_idx % trainer.accumulate_grad_batches == 0:
            self.probe.run.note_batch(batch)
            self.probe.begin_step()
        self.probe.mark("forward")

    def on_before_backward(self, trainer, pl_module, loss) -> None:
        if self.probe is not None:
            self.probe.mark("backward")

    def on_before_optimizer_step(self, trainer, pl_module, optimizer) -> None:
        if self.probe is not None:
            self.probe.mark("optimizer")

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if self.probe is None:
            return
        if (batch_idx + 1) % trainer.accumulate_grad_batches == 0 or trainer.is_last_batch:
            self.probe.end_step()
        loss = outputs.get("loss") if isinstance(outputs, dict) else outputs
        if torch.is_tensor(loss):
            self.probe.log(loss=loss.detach())

    def on_validation_end(self, trainer, pl_module) -> None:
        numbers = {
            k: v.detach() if torch.is_tensor(v) else v
            for k, v in trainer.callback_metrics.items()
            if (torch.is_tensor(v) and v.numel() == 1) or isinstance(v, float)
        }
        if trainer.sanity_checking:
            # Before the probe opens; a held-out value only where it saw every batch.
            if math.isinf(trainer.num_sanity_val_steps):
                self._before = numbers
            return
        if self.probe is not None:
            self.probe.log(**numbers)

    def on_train_end(self, trainer, pl_module) -> None:
        if self.probe is not None:
            self.probe.close()

    def on_exception(self, trainer, pl_module, exception) -> None:
        if self.probe is not None and not self.probe.closed:
            self.probe.abort(exception)
