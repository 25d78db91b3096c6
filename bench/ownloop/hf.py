"""The probe driven by transformers' `Trainer` (docs/own-loop.md): `ProbeCallback` opens a probe
on the Trainer's model and optimizer, marks each optimizer step and receives every logged number;
`precision_args()` gives the driver's mode as TrainingArguments. transformers is optional."""

from __future__ import annotations

try:
    from transformers import TrainerCallback
except ImportError:  # pragma: no cover - the optional dependency is missing
    raise ImportError("bench.ownloop.hf needs transformers: pip install 'ampbench[zoo]'") from None

from bench.ground import catalog
from bench.ownloop import contract, folder
from bench.ownloop.probe import Probe


def precision_args(default: dict[str, bool] | None = None) -> dict[str, bool]:
    """`TrainingArguments`' precision switches for the mode the driver asked for
    (`AMPBENCH_MODE`): `fp16`, `bf16`, `tf32`; outside the driver, `default` (or nothing)."""
    name = contract.asked()
    if name is None:
        return dict(default or {})
    reason = contract.unsupported_reason(name)
    if reason is not None:
        raise ValueError(f"{contract.variable()}={name}: {reason}")
    card = catalog.card(name)
    if card.low_dtype == "float16" and not card.scale_loss:
        raise ValueError(
            f"{contract.variable()}={name}: the Trainer's fp16 always runs GradScaler; it has no "
            "switch for fp16 without one"
        )
    out = {"fp16": card.low_dtype == "float16", "bf16": card.low_dtype == "bfloat16"}
    if card.tf32:
        out["tf32"] = True
    return out


class ProbeCallback(TrainerCallback):
    """A `TrainerCallback` that measures the Trainer's own run; options are `bench.probe`'s."""

    def __init__(self, *, eval_on_start: bool = True, **options: object) -> None:
        self.eval_on_start = eval_on_start
        self.options = options
        self.probe: Probe | None = None

    def on_train_begin(self, args, state, control, model=None, optimizer=None, **kwargs):
        # getattr: a transformers before 4.41 has no eval_on_start to set.
        ask = self.eval_on_start and not getattr(args, "eval_on_start", True)
        if ask and args.eval_strategy != "no":
            # Whether fp32 learned at all shows only against a held-out loss taken before the
            # first update (bench.verdicts.training.target); the Trainer's default evaluates
            # first after `eval_steps` steps. It reads this flag right after this event.
            args.eval_on_start = True
        name = contract.asked()
        if name is not None:
            wanted = precision_args()
            have = {k: bool(getattr(args, k, False)) for k in wanted}
            if have != wanted:
                raise ValueError(
                    f"{contract.variable()}={name} asks for {wanted}, and the Trainer's arguments "
                    f"have {have}: build TrainingArguments with **precision_args()"
                )
        options = dict(self.options)
        options.setdefault(
            "batch_size", args.per_device_train_batch_size * args.gradient_accumulation_steps
        )
        scaler = getattr(optimizer, "scaler", None)  # accelerate's, on its optimizer wrapper
        self.probe = Probe(model, optimizer, scaler=scaler, **options)
        # Above 0 when resumed from a checkpoint: the Trainer loaded its state before this event.
        self.probe.info[folder.START_STEP] = int(state.global_step)

    def on_step_begin(self, args, state, control, **kwargs):
        if self.probe is not None:
            self.probe.begin_step()

    def on_step_end(self, args, state, control, **kwargs):
        if self.probe is not None:
            self.probe.end_step()

    def on_log(self, args, state, control, logs=None, **kwargs):
        if self.probe is None or not logs:
            return
        numbers = {
            k: v for k, v in logs.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
        }
        self.probe.log(**numbers)

    def on_train_end(self, args, state, control, **kwargs):
        if self.probe is not None:
            self.probe.close()
