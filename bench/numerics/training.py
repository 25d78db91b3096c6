"""Training runs of the numerics study: the learnable task (`bench.task`), the one train step.

- `convergence`: train one case for N steps, keeping every step's loss and GradScaler scale, and
  evaluating on the held-out split every `eval_every` steps; the step time used for time-to-target
  is measured separately with the harness's timing function, so logging never touches it.
- `census_trajectory`: train with fp16 autocast and GradScaler (the recommended fp16 recipe), and at
  each checkpoint compare, on the current weights and batch, the gradients of fp16 without scaling,
  fp16 at the scaler's current scale and bf16 against an fp32 reference; at the first and last
  checkpoint also histogram the reference's activation gradients.

Each returns plain lists of flat dict rows, so that a worker process can hand them back.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pandas as pd
import torch
import torch.nn.functional as F

from bench.case import Case
from bench.grads import ACTIVATIONS, capture
from bench.modes import MODES, tf32_enabled
from bench.stats import summarize
from bench.step import TrainState, autocast, build, train_step
from bench.task import HELDOUT_STREAM, Task
from bench.timing import clock_for, time_phases
from bench.underflow import census, fp16_fate, log2_histogram

CENSUS_MODES = ("fp16-amp-noscale", "fp16-amp", "bf16-amp")
SMOOTH_STEPS = 20
"""Window of the rolling mean of the training loss used for final losses, time to target, plots."""


def smoothed(steps: pd.DataFrame) -> pd.Series:
    """Rolling mean of each run's per-step training loss (a run: mode, batch size, seed)."""
    steps = steps.sort_values(["mode", "batch_size", "seed", "step"])
    return steps.groupby(["mode", "batch_size", "seed"])["loss"].transform(
        lambda s: s.rolling(SMOOTH_STEPS, min_periods=1).mean()
    )


@dataclass(frozen=True, kw_only=True)
class Job:
    """One unit of work for a worker: a convergence run or a census trajectory."""

    kind: str  # "convergence" | "census"
    case: Case
    steps: int
    noise: float = 2.0
    eval_every: int = 100
    heldout: int = 8192
    checkpoints: tuple[int, ...] = ()
    histogram: bool = False

    @property
    def cost(self) -> float:
        """Rough relative cost, to hand the longest jobs out first."""
        speed = {"fp32": 8.0, "tf32": 1.5}.get(self.case.mode, 1.0)
        return self.steps * self.case.batch_size * speed


def evaluate(s: TrainState, x: torch.Tensor, y: torch.Tensor) -> tuple[float, float]:
    """Held-out mean cross-entropy and accuracy under the mode's autocast."""
    with torch.no_grad(), autocast(s):
        logits = s.model(x)
    return F.cross_entropy(logits.float(), y).item(), (logits.argmax(1) == y).float().mean().item()


def _step_ms(case: Case, task: Task, prototypes: torch.Tensor) -> float:
    s = build(case)
    s.x, s.y = task.sample(case.batch_size, 0, prototypes)
    samples = time_phases(
        {"step": lambda: train_step(s)}, warmup=5, steps=20, clock=clock_for(case.device)
    )
    return summarize(samples["step"])["median"]


def convergence(job: Job) -> dict[str, list[dict]]:
    case = job.case
    task = Task(size=case.size, seed=case.seed, noise=job.noise, device=case.device)
    axes = {
        "mode": case.mode,
        "batch_size": case.batch_size,
        "seed": case.seed,
        "optimizer": case.optimizer,
        "steps": job.steps,
    }
    with tf32_enabled(MODES[case.mode].tf32):
        protos = task.prototypes()
        step_ms = _step_ms(case, task, protos)
        xh, yh = task.sample(job.heldout, HELDOUT_STREAM, protos)
        s = build(case)
        init_scale = s.scaler.get_scale() if s.mode.scale_loss else None
        losses, scales, evals = [], [], []
        for step in range(job.steps + 1):
            if step % job.eval_every == 0 or step == job.steps:
                loss, acc = evaluate(s, xh, yh)
                evals.append({**axes, "step": step, "heldout_loss": loss, "heldout_acc": acc})
            if step == job.steps:
                break
            s.x, s.y = task.sample(case.batch_size, step, protos)
            losses.append(train_step(s).detach())
            # get_scale() syncs; this loop is not timed (step_ms above is measured apart).
            scales.append(s.scaler.get_scale() if s.mode.scale_loss else None)
    loss_values = torch.stack(losses).float().cpu().tolist()
    steps = []
    for i, (loss, scale) in enumerate(zip(loss_values, scales, strict=True)):
        before = scales[i - 1] if i else init_scale
        skipped = scale is not None and scale < before  # GradScaler halves after a skipped step
        steps.append({**axes, "step": i, "loss": loss, "scale": scale, "skipped": skipped})
    return {"steps": steps, "evals": evals, "runs": [{**axes, "step_ms": step_ms}]}


def census_trajectory(job: Job) -> dict[str, list[dict]]:
    case = job.case
    assert case.mode == "fp16-amp", "the census trajectory trains with fp16 and GradScaler"
    task = Task(size=case.size, seed=case.seed, noise=job.noise, device=case.device)
    protos = task.prototypes()
    s = build(case)
    off = torch.amp.GradScaler(case.device, enabled=False)
    census_rows, hist_rows, fate_rows = [], [], []
    last = max(job.checkpoints)
    for step in range(last + 1):
        s.x, s.y = task.sample(case.batch_size, step, protos)
        if step in job.checkpoints:
            scale = s.scaler.get_scale()
            axes = {"batch_size": case.batch_size, "step": step, "loss_scale": scale}
            with tf32_enabled(False):
                ref = capture(dataclasses.replace(s, mode=MODES["fp32"], scaler=off))
            for name in CENSUS_MODES:
                scaler = s.scaler if MODES[name].scale_loss else off
                cap = capture(dataclasses.replace(s, mode=MODES[name], scaler=scaler))
                used = scale if MODES[name].scale_loss else 1.0
                pairs = [
                    (f"grad of {n} output", cap.activation_grads[n], ref.activation_grads[n])
                    for n in ACTIVATIONS
                ]
                pairs += [
                    (f"{n} grad", g, ref.produced_grads[n])
                    for n, g in sorted(cap.produced_grads.items())
                ]
                for tensor, g, r in pairs:
                    census_rows.append(
                        {
                            **axes,
                            "mode": name,
                            "tensor": tensor,
                            "dtype": str(g.dtype).removeprefix("torch."),
                            **census(g, r, used),
                        }
                    )
            if job.histogram and step in (min(job.checkpoints), last):
                pooled = torch.cat([ref.activation_grads[n].flatten() for n in ACTIVATIONS])
                for row in log2_histogram(pooled):
                    hist_rows.append({**axes, **row})
                for label, values in [("all activation grads", pooled)] + [
                    (f"grad of {n} output", ref.activation_grads[n]) for n in ACTIVATIONS
                ]:
                    for shift, used in (("unscaled", 1.0), ("scaled", scale)):
                        fate_rows.append(
                            {
                                **axes,
                                "tensor": label,
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


def run_job(job: Job) -> dict[str, list[dict]]:
    """Run one job; a fault (out of memory, any exception) becomes a row of `failed`."""
    try:
        return {"convergence": convergence, "census": census_trajectory}[job.kind](job)
    except Exception as exc:  # recorded; the other jobs go on
        c = job.case
        first_line = (str(exc).splitlines() or [""])[0]
        return {
            "failed": [
                {
                    "kind": job.kind,
                    "mode": c.mode,
                    "batch_size": c.batch_size,
                    "seed": c.seed,
                    "error": f"{type(exc).__name__}: {first_line}"[:500],
                }
            ]
        }
    finally:
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
