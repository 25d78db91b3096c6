"""A case resolved (`resolve`): the objects one case trains and runs with, looked up once at its
job's entry and handed down, with what their users derive from them (the float8 plan, why it
cannot run here) and the step's options (`StepOptions`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property

from bench.cases.case import Case
from bench.ground.axes import PARALLELS, VARIANTS, Parallel, Variant
from bench.modes import fp8
from bench.modes.mode import MODES, Mode
from bench.plan.float8_plan import float8_unsupported_reason
from bench.workloads import registry
from bench.workloads.base import Workload


@dataclass(frozen=True, kw_only=True)
class StepOptions:
    """How a step differs between the studies that run it; the defaults are the harness's."""

    grad_clip: float = 0.0
    """Clip the gradients' global norm to this before the update (0: no clip). Clipping reads
    the norm on the device; `clip_grad_norm_` does not sync."""
    unscale_before_clip: bool = True
    """With a loss scaler, unscale the gradients before the clip, so the clip sees the true
    gradients and not ones the scale multiplied (GradScaler's documented order)."""
    dropout: bool = True
    """Train with the model in training mode (its dropout, where it has any, on); off: eval
    mode, the step of a fixed function."""
    eval_every: int = 0
    """Held-out evaluation every this many steps, outside any timed step (0: none)."""
    betas: tuple[float, float] = (0.9, 0.999)
    """Adam's betas (torch's defaults); the optimizer is built with them (`build`)."""
    weight_decay: float = 0.0
    """AdamW's decoupled weight decay on the weights of an optimizer row with nanoGPT's groups
    (`bench.ground.optimizers.Optimizer.decay_groups`); Adam's rows take none."""

    def __post_init__(self) -> None:
        if not all(0 <= b < 1 for b in self.betas) or len(self.betas) != 2:
            raise ValueError(f"StepOptions.betas must be two numbers in [0, 1), got {self.betas!r}")
        if not (self.weight_decay >= 0 and self.weight_decay != float("inf")):
            raise ValueError(
                f"StepOptions.weight_decay must be finite and >= 0, got {self.weight_decay!r}"
            )
        if not (self.grad_clip >= 0 and self.grad_clip != float("inf")):
            raise ValueError(
                f"StepOptions.grad_clip must be finite and >= 0, got {self.grad_clip!r}"
            )
        if self.eval_every < 0:
            raise ValueError(f"StepOptions.eval_every must be >= 0, got {self.eval_every!r}")

    def describe(self) -> str:
        """The options in a short phrase, for a report's method line."""
        if self.grad_clip > 0:
            unscaled = ", unscaled first" if self.unscale_before_clip else ", not unscaled first"
            clip = f"gradients clipped at norm {self.grad_clip:g}{unscaled}"
        else:
            clip = "no gradient clipping"
        dropout = "dropout on" if self.dropout else "dropout off"
        evaluation = (
            f"held-out evaluation every {self.eval_every} steps, untimed"
            if self.eval_every
            else "no evaluation"
        )
        return f"{clip}; {dropout}; {evaluation}"


HARNESS = StepOptions()
"""The timing harness's step: forward, backward, update, nothing else."""


@dataclass(frozen=True, kw_only=True)
class Plan:
    case: Case
    """The case as its row names it: every axis, as strings and numbers."""
    workload: Workload
    """The case's model (`case.model`), built-in, from a zoo or a user's factory."""
    size: object
    """The workload's size object of the case (its preset's, or the case's own sizes)."""
    mode: Mode
    """The mode the case trains with: `case.mode`'s, or one a study tries that the mode table
    has not (`with_mode`)."""
    variant: Variant
    """How the step is executed (`case.variant`)."""
    parallel: Parallel
    """How the model is spread over the ranks (`case.parallel`)."""
    step_options: StepOptions = HARNESS
    """How its train step differs from the harness's (the study that runs it sets them)."""

    # A frozen dataclass keeps a cached property: it is written to the instance's __dict__, not
    # set through __setattr__. A plan made anew (`with_mode`, `with_case`) derives it anew.
    @cached_property
    def fp8_plan(self) -> dict[str, str]:
        """Per Linear: `converted` to float8, or `kept: <why>`; empty for a mode that is not
        float8, and for a workload that cannot be built here (a package it needs is missing)."""
        if self.workload.unsupported_reason() is not None:
            return {}
        return self.mode.fp8_plan(self.workload, self.size)

    @cached_property
    def unsupported_reason(self) -> str | None:
        """Why this plan cannot run here, or None: the one place that asks its workload, its
        variant and its mode's torch side (its float8 plan, torchao, a float8 GPU). Its
        parallelism, which depends on the ranks, is asked beside it (`unsupported_in`)."""
        case, workload, variant, mode = self.case, self.workload, self.variant, self.mode
        reason = workload.unsupported_reason()
        if reason is not None:
            return f"{workload.name}: {reason}"
        if variant.graphs and case.device != "cuda":
            return "CUDA graphs need a CUDA device"
        # A float8 plan that converts no Linear (none float8 can run, or all below torchao's
        # size thresholds) would time bf16 autocast under a float8 name, on any machine.
        reason = (
            float8_unsupported_reason(self.fp8_plan, workload.name) if mode.fp8_scaling else None
        )
        if reason is not None:
            if not fp8.convertible(workload, self.size):
                reason += (
                    " (torchao's float8 training converts nn.Linear modules only, not convolutions)"
                )
            return f"{mode.name}: {reason}"
        reason = mode.unsupported_reason(case.device)
        if reason is not None:
            return f"{mode.name}: {reason}"
        if variant.capture and mode.stochastic_round:
            # A hand capture needs a capturable optimizer; torchao's _AdamW has no such option.
            return "torchao's _AdamW cannot be captured in a CUDA graph by hand (not capturable)"
        return None

    def unsupported_in(self, world_size: int) -> str | None:
        """Why this plan cannot run in a run of `world_size` ranks, as its row says, or None:
        the rule a run's rows (`bench.measure.runner.run_case`) and the refusal of a grid
        before any folder (`bench.jobs.configs.nothing_runs`) both ask."""
        return self.unsupported_reason or parallel_unsupported_reason(
            self.parallel, variant=self.case.variant, world_size=world_size
        )

    def with_mode(self, mode: Mode) -> Plan:
        """This plan under another mode; the case names it where the mode table has it (a
        mode a study tries leaves the case as it was)."""
        if mode.card is None or mode.card.name != mode.name:
            return dataclasses.replace(self, mode=mode)
        case = dataclasses.replace(self.case, mode=mode.name)
        return dataclasses.replace(self, mode=mode, case=case)

    def with_step_options(self, step_options: StepOptions) -> Plan:
        return dataclasses.replace(self, step_options=step_options)

    def with_size(self, size: object) -> Plan:
        """This plan with its model at `size`, not at the sizes its case spells (the quality
        study's model, sized to its data)."""
        return dataclasses.replace(self, size=size)

    def with_case(self, **axes: object) -> Plan:
        """This plan with other values of axes that need no lookup (batch size, seed, lr, ...)."""
        looked_up = {"model", "preset", "sizes", "mode", "variant", "parallel"} & set(axes)
        if looked_up:
            raise ValueError(f"with_case: {sorted(looked_up)[0]} needs a new plan (resolve)")
        return dataclasses.replace(self, case=dataclasses.replace(self.case, **axes))


def parallel_unsupported_reason(p: Parallel, *, variant: str, world_size: int) -> str | None:
    """Why a parallelism cannot run in this run, or None when it can."""
    if not p.distributed:
        return None
    if world_size < 2:
        return f"{p.name} needs several ranks (run with --gpus N, N >= 2)"
    if variant != "eager":
        # torch.compile under DDP (DDPOptimizer) and FSDP2, and a CUDA graph around NCCL
        # collectives, can work, but none is validated here yet: not a row with a wrong number.
        return f"variant {variant} with {p.name} is not supported yet (eager only)"
    return None


def resolve(case: Case, mode: Mode | None = None, *, step_options: StepOptions = HARNESS) -> Plan:
    """The plan of `case`: its workload and size, its mode's torch side (or `mode`, a mode the
    table has not), its variant, its parallelism and its step's options. A bad model name is one
    line (`bench.faults.UsageError`, from the registry)."""
    workload = registry.get(case.model)
    if mode is None:
        mode = MODES[case.mode]
    return Plan(
        case=case,
        workload=workload,
        size=workload.size_of(case),
        mode=mode,
        variant=VARIANTS[case.variant],
        parallel=PARALLELS[case.parallel],
        step_options=step_options,
    )


def modes_of(names: Iterable[str] | None = None) -> dict[str, Mode]:
    """The modes of `names` (every mode of the table where None), looked up once here for a
    study that trains or audits several modes on one case (`Plan.with_mode` applies each)."""
    return dict(MODES) if names is None else {name: MODES[name] for name in names}
