"""Training runs of the numerics study: the learnable task (`bench.numerics.task`), the one step.

- `convergence`: train one case for N steps, keeping every step's loss and GradScaler scale, and
  evaluating on the held-out split every `eval_every` steps; the step time used for time-to-target
  is measured separately with the harness's timing function, so logging never touches it. Every
  `trace_every` steps it also traces the mechanism of a divergence, per parameter (`trace`).
- `census_trajectory`: train with fp16 autocast and GradScaler (the recommended fp16 recipe), and at
  each checkpoint compare, on the current weights and batch, the gradients of fp16 without scaling,
  fp16 at the scaler's current scale and bf16 against an fp32 reference; at the first and last
  checkpoint also histogram the reference's activation gradients.

Each returns plain lists of flat dict rows by table name (`bench.numerics.tables`), so that a
worker process can hand them back.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from bench.case import Case
from bench.modes import dtype_name
from bench.numerics.grads import capture
from bench.numerics.tables import ACTIVATION_GRAD, ACTIVATIONS, POOLED, PRODUCED_GRAD, grad_tensor
from bench.numerics.task import HELDOUT_STREAM, Task
from bench.numerics.underflow import census, fp16_fate, log2_histogram
from bench.stats import summarize
from bench.step import TrainState, backward, build, forward, optimizer_update, train_step
from bench.timing import clock_for, time_phases

CENSUS_MODES = ("fp16-amp-noscale", "fp16-amp", "bf16-amp")
"""The low-precision modes the census compares with the fp32 reference."""
MEDIAN_SAMPLE = 2**24
"""A trace's medians are taken over at most this many evenly strided elements of a tensor: an exact
median sorts, and a 16000 × 16000 weight has 2.6e8."""


def _median(t: torch.Tensor) -> float:
    flat = t.detach().flatten().float()
    stride = -(-flat.numel() // MEDIAN_SAMPLE)  # ceil: 1 for a tensor within the sample
    return flat[::stride].median().item() if flat.numel() else float("nan")


def _rms(t: torch.Tensor) -> torch.Tensor:
    return t.float().square().mean().sqrt()


def traced_step(s: TrainState) -> tuple[torch.Tensor, list[dict]]:
    """One train step, the same phases as `bench.step.train_step`, that also reports per parameter
    what a divergence is made of: the share of `param.grad` exactly zero (float16 flushes
    gradients to zero; with a scaler the grad is still scaled here, which a zero does not mind),
    Adam's second moment after the step (median, and the share below eps², where eps, not the
    gradient, sets the step's size), the median |first moment|, and the step's size: RMS of the
    change over RMS of the weights, and the largest |change|. Syncs freely: never timed. Returns
    the loss and one row per parameter (the caller adds the run's columns and the step)."""
    params = dict(s.model.named_parameters())
    # Copied only at traced steps: the change is the only way to see Adam's actual update.
    before = {n: p.detach().clone() for n, p in params.items()}
    scale_before = s.scaler.get_scale() if s.mode.scale_loss else None
    _, loss = forward(s)
    backward(s, loss)
    zeros = {
        n: (p.grad == 0).float().mean().item() if p.grad is not None else float("nan")
        for n, p in params.items()
    }
    optimizer_update(s)
    scale = s.scaler.get_scale() if s.mode.scale_loss else None
    skipped = scale is not None and scale < scale_before  # the scaler halves after a skip
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
            }
        )
    s.optimizer.zero_grad(set_to_none=True)
    return loss, rows


def evaluate(s: TrainState, x: torch.Tensor, y: torch.Tensor) -> tuple[float, float]:
    """Held-out mean cross-entropy and accuracy, the forward pass in the mode's context."""
    with torch.no_grad(), s.mode.context(s.case.device, forward=True):
        logits = s.model(s.mode.cast_input(x))
    return F.cross_entropy(logits.float(), y).item(), (logits.argmax(1) == y).float().mean().item()


def _step_ms(case: Case, task: Task, prototypes: torch.Tensor) -> float:
    s = build(case)
    s.x, s.y = task.sample(case.batch_size, 0, prototypes)
    samples = time_phases(
        {"step": lambda: train_step(s)}, warmup=5, steps=20, clock=clock_for(case.device)
    )
    return summarize(samples["step"])["median"]


def convergence(
    case: Case, *, steps: int, noise: float, eval_every: int, heldout: int, trace_every: int = 0
) -> dict[str, list[dict]]:
    """`steps` training steps of `case` on the task; rows of `steps`, `evals`, `runs` and, every
    `trace_every` steps (0: never), `traces`."""
    task = Task(size=case.size, seed=case.seed, noise=noise, device=case.device)
    axes = {
        "mode": case.mode,
        "batch_size": case.batch_size,
        "seed": case.seed,
        "optimizer": case.optimizer,
        "steps": steps,
    }
    protos = task.prototypes()
    step_ms = _step_ms(case, task, protos)
    xh, yh = task.sample(heldout, HELDOUT_STREAM, protos)
    s = build(case)
    init_scale = s.scaler.get_scale() if s.mode.scale_loss else None
    losses, scales, evals, traces = [], [], [], []
    for step in range(steps + 1):
        if step % eval_every == 0 or step == steps:
            loss, acc = evaluate(s, xh, yh)
            evals.append({**axes, "step": step, "heldout_loss": loss, "heldout_acc": acc})
        if step == steps:
            break
        s.x, s.y = task.sample(case.batch_size, step, protos)
        if trace_every and step % trace_every == 0:
            loss, rows = traced_step(s)
            traces += [{**axes, "step": step, **row} for row in rows]
        else:
            loss = train_step(s)
        losses.append(loss.detach())
        # get_scale() syncs; this loop is not timed (step_ms above is measured apart).
        scales.append(s.scaler.get_scale() if s.mode.scale_loss else None)
    loss_values = torch.stack(losses).float().cpu().tolist() if losses else []
    rows = []
    for i, (loss, scale) in enumerate(zip(loss_values, scales, strict=True)):
        before = scales[i - 1] if i else init_scale
        skipped = scale is not None and scale < before  # GradScaler halves after a skipped step
        rows.append({**axes, "step": i, "loss": loss, "scale": scale, "skipped": skipped})
    return {
        "steps": rows,
        "evals": evals,
        "runs": [{**axes, "step_ms": step_ms}],
        "traces": traces,
    }


def census_trajectory(
    case: Case, *, noise: float, checkpoints: tuple[int, ...], histogram: bool
) -> dict[str, list[dict]]:
    """Train `case` (fp16-amp) up to the last checkpoint; rows of `census` at every checkpoint,
    and, with `histogram`, of `histogram` and `fp16_fate` at the first and last."""
    if case.mode != "fp16-amp":
        raise ValueError(f"the census trajectory trains with fp16-amp, got mode {case.mode!r}")
    task = Task(size=case.size, seed=case.seed, noise=noise, device=case.device)
    protos = task.prototypes()
    s = build(case)
    census_rows, hist_rows, fate_rows = [], [], []
    last = max(checkpoints)
    for step in range(last + 1):
        s.x, s.y = task.sample(case.batch_size, step, protos)
        if step in checkpoints:
            scale = s.scaler.get_scale()
            # The trajectory's training loss on this step's batch, to read a census row against.
            with torch.no_grad():
                _, loss = forward(s)
            axes = {"batch_size": case.batch_size, "step": step, "loss_scale": scale}
            ref = capture(s.as_mode("fp32"))
            for name in CENSUS_MODES:
                # The scaled mode uses the trajectory's scaler, so its current scale; the others
                # get a scaler of their own mode, which does not scale.
                view = s.as_mode(name, scaler=s.scaler if s.mode.name == name else None)
                cap = capture(view)
                used = scale if view.mode.scale_loss else 1.0
                pairs = [
                    (
                        grad_tensor(ACTIVATION_GRAD, n),
                        cap.activation_grads[n],
                        ref.activation_grads[n],
                    )
                    for n in ACTIVATIONS
                ]
                pairs += [
                    (grad_tensor(PRODUCED_GRAD, n), g, ref.produced_grads[n])
                    for n, g in sorted(cap.produced_grads.items())
                ]
                for tensor, g, r in pairs:
                    census_rows.append(
                        {
                            **axes,
                            "mode": name,
                            **tensor,
                            "dtype": dtype_name(g.dtype),
                            **census(g, r, used),
                            "loss": loss.item(),
                        }
                    )
            if histogram and step in (min(checkpoints), last):
                pooled = torch.cat([ref.activation_grads[n].flatten() for n in ACTIVATIONS])
                for row in log2_histogram(pooled):
                    hist_rows.append({**axes, **row})
                for module, values in [(POOLED, pooled)] + [
                    (n, ref.activation_grads[n]) for n in ACTIVATIONS
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
    return {"census": census_rows, "histogram": hist_rows, "fp16_fate": fate_rows}
