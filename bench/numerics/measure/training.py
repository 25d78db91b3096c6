"""The study's training runs on the workload's learnable task, through the one step: `convergence`
and `census_trajectory` (fp16 with GradScaler, compared with fp32 at checkpoints), rows by table."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

import torch

from bench.faults import fault
from bench.ground.catalog import autocast_modes, default_modes, fp16_pair, reference
from bench.measure.stats import summarize
from bench.measure.timing import NoTrainingStep, clock_for, time_settled
from bench.modes import fp8
from bench.modes.mode import MODES, Mode, dtype_name
from bench.numerics.measure.grads import capture
from bench.numerics.measure.tables import ACTIVATION_GRAD, POOLED, PRODUCED_GRAD, grad_tensor
from bench.numerics.measure.underflow import census, fp16_fate, log2_histogram
from bench.plan.plan import Plan
from bench.plan.step import (
    StepOptions,
    TrainState,
    build,
    evaluate,
    forward,
    skipped_by_scale,
    train_step,
    watch,
)
from bench.workloads.tasks import HELDOUT_STREAM, Task

CENSUS_MODES = (fp16_pair()[1], *autocast_modes())
"""The modes the census compares with fp32 on the trajectory's own model."""
OWN_MODEL_CENSUS_MODES = tuple(
    name
    for name, m in MODES.items()
    if name in default_modes()
    and (m.param_dtype is not None or m.fp8_scaling is not None)
    and not m.stochastic_round
)
"""Census modes with a model of their own (the trajectory's weights); not stochastic rounding:
it differs in the update only."""
CENSUS_ALL = tuple(dict.fromkeys((reference(), *CENSUS_MODES, *OWN_MODEL_CENSUS_MODES)))
"""Every mode a census trajectory uses, the reference first (the job resolves them)."""
MEDIAN_SAMPLE = 2**24
"""A trace's medians take at most this many evenly strided elements (an exact one sorts 2.6e8)."""


def _median(t: torch.Tensor) -> float:
    flat = t.detach().flatten().float()
    stride = -(-flat.numel() // MEDIAN_SAMPLE)  # ceil: 1 for a tensor within the sample
    return flat[::stride].median().item() if flat.numel() else float("nan")


def _rms(t: torch.Tensor) -> torch.Tensor:
    return t.float().square().mean().sqrt()


def half_ulp(w: torch.Tensor) -> torch.Tensor:
    """Half the spacing of `w`'s dtype at each element (float32): a smaller update rounds back
    to the same weight. Zero weights take the smallest normal's."""
    info = torch.finfo(w.dtype)
    w32 = w.detach().float()
    _, exponent = torch.frexp(w32)  # |w| = m * 2**exponent, m in [0.5, 1)
    spacing = torch.ldexp(torch.full_like(w32, info.eps), exponent - 1)
    return torch.where(w32 == 0, torch.full_like(w32, info.tiny * info.eps), spacing) / 2


def adam_update(optimizer: torch.optim.Optimizer, p: torch.Tensor) -> torch.Tensor | None:
    """The update Adam meant to apply to `p` at its last step, lr * m_hat / (sqrt(v_hat) + eps)
    in float32 from its state (no weight decay: the study's has none); None before a step."""
    state = optimizer.state.get(p, {})
    if not {"step", "exp_avg", "exp_avg_sq"} <= set(state):
        return None
    group = next(g for g in optimizer.param_groups if any(q is p for q in g["params"]))
    beta1, beta2 = group["betas"]
    t = float(state["step"])
    m_hat = state["exp_avg"].float() / (1 - beta1**t)
    v_hat = state["exp_avg_sq"].float() / (1 - beta2**t)
    return float(group["lr"]) * m_hat / (v_hat.sqrt() + group["eps"])


def update_underflow(
    before: torch.Tensor, after: torch.Tensor, update: torch.Tensor | None
) -> dict[str, float]:
    """One parameter's update underflow (`half_ulp`) and unchanged share at one step."""
    unchanged = (after == before).float().mean().item()
    if update is None:
        return {"update_underflow_share": float("nan"), "unchanged_share": unchanged}
    below = update.abs() < half_ulp(before)
    return {"update_underflow_share": below.float().mean().item(), "unchanged_share": unchanged}


def traced_step(s: TrainState) -> tuple[torch.Tensor, list[dict]]:
    """One train step (`step.train_step`) and, per parameter, what a divergence is made of: zeros
    in `param.grad`, Adam's moments and the update's size (`tables.TABLES["traces"]`). Syncs
    freely: never timed. Returns the loss and one row per parameter."""
    params = dict(s.model.named_parameters())
    # Copied only at traced steps: the change is the only way to see Adam's actual update.
    before = {n: p.detach().clone() for n, p in params.items()}
    scale_before = s.scaler.get_scale() if s.mode.scale_loss else None
    zeros: dict[str, float] = {}

    def count_zeros(done: str, loss: torch.Tensor) -> None:
        if done == "backward":  # the gradients before the update drops them
            for n, p in params.items():
                zeros[n] = (p.grad == 0).float().mean().item() if p.grad is not None else math.nan

    loss = train_step(dataclasses.replace(s, observe=count_zeros))
    scale = s.scaler.get_scale() if s.mode.scale_loss else None
    skipped = scale is not None and bool(skipped_by_scale(torch.tensor([scale_before, scale]))[0])
    eps2 = s.optimizer.param_groups[0]["eps"] ** 2
    loss_value = loss.item()
    rows = []
    for n, p in params.items():
        state = s.optimizer.state.get(p, {})
        sq, avg = state.get("exp_avg_sq"), state.get("exp_avg")
        change = p.detach().float() - before[n].float()
        weights = _rms(before[n])
        rows.append(
            {
                "module": n,
                "loss": loss_value,
                "scale": scale,
                "skipped": skipped,
                "grad_zero_share": zeros[n],
                "exp_avg_sq_median": _median(sq) if sq is not None else float("nan"),
                "exp_avg_sq_below_eps2_share": (
                    (sq.float() < eps2).float().mean().item() if sq is not None else float("nan")
                ),
                "exp_avg_abs_median": _median(avg.abs()) if avg is not None else float("nan"),
                "update_rms_ratio": (_rms(change) / weights).item()
                if weights > 0
                else float("nan"),
                "update_max_abs": change.abs().max().item(),
                **update_underflow(before[n], p.detach(), adam_update(s.optimizer, p)),
            }
        )
    return loss, rows


def _step_ms(plan: Plan, task: Task) -> float:
    case = plan.case
    s = build(plan)
    s.x, s.y = task.sample(case.batch_size, 0)
    try:
        samples = time_settled(
            {"step": lambda: train_step(s)},
            warmup=5,
            steps=20,
            clock=clock_for(case.device),
            watch=watch(s),
        )
    except NoTrainingStep:  # a scale stuck at 0 (or not finite), or every step skipped
        return math.nan  # no training step to time; the trajectory's rows say why
    return summarize(samples["step"])["median"]


def model_state_gib(s: TrainState) -> float:
    """GiB of the parameters, their gradients and the optimizer's state (no activations)."""
    params = sum(p.numel() * p.element_size() for p in s.model.parameters())
    state = sum(
        t.numel() * t.element_size()
        for st in s.optimizer.state.values()
        for t in st.values()
        if torch.is_tensor(t)
    )
    return (2 * params + state) / 2**30


def convergence(
    plan: Plan, *, steps: int, noise: float, eval_every: int, heldout: int, trace_every: int = 0
) -> dict[str, list[dict]]:
    """`steps` steps of the plan's case: rows of `steps`, `evals`, `runs` and `traces`."""
    case = plan.case
    task = plan.workload.make_task(plan.size, case.seed, noise, case.device)
    axes = {
        "mode": case.mode,
        "batch_size": case.batch_size,
        "seed": case.seed,
        "optimizer": case.optimizer,
        "steps": steps,
    }
    step_ms = _step_ms(plan, task)
    xh, yh = task.sample(heldout, HELDOUT_STREAM)
    s = build(plan.with_step_options(StepOptions(eval_every=eval_every)))
    init_scale = s.scaler.get_scale() if s.mode.scale_loss else None
    losses, scales, evals, traces = [], [], [], []
    for step in range(steps + 1):
        if step % eval_every == 0 or step == steps:
            # In batches of the case's size: a transformer's logits for the split would not fit.
            batches = zip(xh.split(case.batch_size), yh.split(case.batch_size), strict=True)
            loss, acc = evaluate(s, batches, plan.workload.loss)
            evals.append({**axes, "step": step, "heldout_loss": loss, "heldout_acc": acc})
        if step == steps:
            break
        s.x, s.y = task.sample(case.batch_size, step)
        if trace_every and step % trace_every == 0:
            loss, rows = traced_step(s)
            traces += [{**axes, "step": step, **row} for row in rows]
        else:
            loss = train_step(s)
        losses.append(loss.detach())
        # get_scale() syncs; this loop is not timed (step_ms above is measured apart).
        scales.append(s.scaler.get_scale() if s.mode.scale_loss else None)
    loss_values = torch.stack(losses).float().cpu().tolist() if losses else []
    skips = (
        skipped_by_scale(torch.tensor([init_scale, *scales], dtype=torch.float64)).tolist()
        if s.mode.scale_loss
        else [False] * len(scales)
    )
    rows = []
    for i, (loss, scale) in enumerate(zip(loss_values, scales, strict=True)):
        rows.append({**axes, "step": i, "loss": loss, "scale": scale, "skipped": skips[i]})
    return {
        "steps": rows,
        "evals": evals,
        "runs": [
            {
                **axes,
                "step_ms": step_ms,
                "step_options": s.options.describe(),
                "model_state_gib": model_state_gib(s),
                # The held-out loss a perfect model reaches: the task's own process on the split.
                "true_heldout_loss": task.true_loss((xh, yh)),
            }
        ],
        "traces": traces,
    }


def census_trajectory(
    plan: Plan,
    modes: Mapping[str, Mode],
    *,
    noise: float,
    checkpoints: tuple[int, ...],
    histogram: bool,
) -> dict[str, list[dict]]:
    """Train fp16 with GradScaler to the last checkpoint: census, histogram, fp16_fate rows."""
    case = plan.case
    scaled, _ = fp16_pair()
    if case.mode != scaled:
        raise ValueError(f"the census trajectory trains with {scaled}, got mode {case.mode!r}")
    task = plan.workload.make_task(plan.size, case.seed, noise, case.device)
    s = build(plan)
    census_rows, hist_rows, fate_rows, failed_rows = [], [], [], []
    last = max(checkpoints)
    for step in range(last + 1):
        s.x, s.y = task.sample(case.batch_size, step)
        if step in checkpoints:
            scale = s.scaler.get_scale()
            # The trajectory's training loss on this step's batch, to read a census row against.
            with torch.no_grad():
                _, loss = forward(s)
            axes = {"batch_size": case.batch_size, "step": step, "loss_scale": scale}
            ref = capture(s.as_mode(modes[reference()]))
            for name in CENSUS_MODES:
                # The scaled mode uses the trajectory's scaler, so its current scale; the others
                # get a scaler of their own mode, which does not scale.
                view = s.as_mode(modes[name], scaler=s.scaler if s.mode.name == name else None)
                cap = capture(view)
                used = scale if view.mode.scale_loss else 1.0
                census_rows += _census_rows(cap, ref, {**axes, "mode": name}, used, loss)
            for name in OWN_MODEL_CENSUS_MODES:
                own = plan.with_mode(modes[name])
                if own.unsupported_reason is not None:
                    continue
                try:
                    cap = capture(_with_weights(own, s))
                except Exception as exc:  # one mode's failure is a row, not the trajectory's
                    failed_rows.append(
                        {
                            "kind": "census",
                            "mode": name,
                            "batch_size": case.batch_size,
                            "seed": case.seed,
                            **fault(exc, prefix=f"step {step}: "),
                        }
                    )
                    continue
                census_rows += _census_rows(cap, ref, {**axes, "mode": name}, 1.0, loss)
            if histogram and step in (min(checkpoints), last):
                names = ref.observed
                pooled = torch.cat([ref.activation_grads[n].flatten() for n in names])
                for module, values in (
                    (POOLED, pooled),
                    (names[-1], ref.activation_grads[names[-1]]),
                ):
                    for row in log2_histogram(values):
                        hist_rows.append({**axes, "module": module, **row})
                for module, values in [(POOLED, pooled)] + [
                    (n, ref.activation_grads[n]) for n in names
                ]:
                    for shift, used in (("unscaled", 1.0), ("scaled", scale)):
                        fate_rows.append(
                            {
                                **axes,
                                **grad_tensor(ACTIVATION_GRAD, module),
                                "shift": shift,
                                "multiplier": used,
                                **fp16_fate(values, used),
                            }
                        )
            del ref, cap
            s.optimizer.zero_grad(set_to_none=True)
        if step < last:
            train_step(s)
    return {
        "census": census_rows,
        "histogram": hist_rows,
        "fp16_fate": fate_rows,
        "failed": failed_rows,
    }


def _with_weights(plan: Plan, s: TrainState) -> TrainState:
    """A state of the plan's mode (its own model) with `s`'s weights and batch."""
    other = build(plan)
    fp8.copy_weights(other.model, s.model)
    other.x, other.y = s.x, s.y
    return other


def _census_rows(cap, ref, axes: dict, used: float, loss: torch.Tensor) -> list[dict]:
    """One mode's captured gradients against the reference's (activations', produced)."""
    pairs = [
        (grad_tensor(ACTIVATION_GRAD, n), cap.activation_grads[n], ref.activation_grads[n])
        for n in ref.observed
    ]
    pairs += [
        (grad_tensor(PRODUCED_GRAD, n), g, ref.produced_grads[n])
        for n, g in sorted(cap.produced_grads.items())
    ]
    return [
        {
            **axes,
            **tensor,
            "dtype": dtype_name(g.dtype),
            **census(g, r, used),
            "loss": loss.item(),
        }
        for tensor, g, r in pairs
    ]
