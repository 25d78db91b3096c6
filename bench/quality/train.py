"""One run of the time-to-quality study: a mode trained on real data with the one train step and
the study's step options, evaluated every `eval_every` steps (read once per evaluation, so the loop
never waits between steps); its step timed alone; and the GradScaler check (docs/quality.md)."""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from bench.cases.case import Case
from bench.faults import fault
from bench.measure.memory import GIB
from bench.measure.stats import applied, summarize
from bench.measure.timing import clock_for, time_settled
from bench.modes.mode import Mode
from bench.numerics.measure.underflow import fp16_cast_shares, norm_share
from bench.plan.plan import Plan, StepOptions
from bench.plan.step import build, skipped_by_scale, train_step, watch
from bench.plan.step import evaluate as heldout
from bench.quality import tables
from bench.quality.config import QualityConfig
from bench.quality.feed import Feed, Fitted
from bench.workloads.base import Workload


def lr_at(cfg: QualityConfig, step: int) -> float:
    """nanoGPT's schedule: linear warm-up to `lr`, then a cosine down to `min_lr` at the last
    step."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / (cfg.warmup + 1)
    span = max(cfg.steps - cfg.warmup, 1)
    ratio = min((step - cfg.warmup) / span, 1.0)
    return cfg.min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (cfg.lr - cfg.min_lr)


def options(cfg: QualityConfig) -> StepOptions:
    """The study's step: nanoGPT's clip (after unscaling), dropout on, held-out evaluation, and
    its AdamW's betas (beta1 0.9) and weight decay."""
    return StepOptions(
        grad_clip=cfg.grad_clip,
        dropout=True,
        eval_every=cfg.eval_every,
        betas=(0.9, cfg.beta2),
        weight_decay=cfg.weight_decay,
    )


def case(cfg: QualityConfig, workload: Workload, mode: str) -> Case:
    """The case that names a run's axes (its first seed's; each run's plan takes its own). Its
    model is sized to the data (`Resolved.fitted`), not to the preset's sizes the case spells."""
    return workload.case(
        cfg.model,
        cfg.preset,
        mode=mode,
        # nanoGPT's AdamW with its weight-decay groups, fused on a GPU (as its train.py runs it)
        optimizer="adamw-fused" if cfg.device == "cuda" else "adamw",
        batch_size=cfg.batch_size,
        device=cfg.device,
        seed=cfg.seeds[0],
        lr=cfg.lr,
    )


@dataclass(frozen=True)
class Resolved:
    """What a run trains with, looked up once by the job (`bench.quality.job.study`): its
    plan, by the one resolver (`bench.plan.plan.resolve`), at the size of the study's model
    sized to its data (`fitted`, which holds the data too), and fp32's mode (the GradScaler
    check's reference)."""

    plan: Plan
    fitted: Fitted
    reference: Mode

    @property
    def mode(self) -> Mode:
        """The mode the run trains with."""
        return self.plan.mode

    def with_mode(self, mode: Mode) -> Resolved:
        """The same run under `mode` (`Plan.with_mode`)."""
        return dataclasses.replace(self, plan=self.plan.with_mode(mode))


class Run:
    """One mode, one seed: the state the one train step runs (`bench.plan.step`), and its
    batches."""

    def __init__(self, cfg: QualityConfig, resolved: Resolved, seed: int):
        self.cfg, self.seed, self.device = cfg, seed, cfg.device
        self.mode, self.reference = resolved.mode, resolved.reference
        self.fitted = resolved.fitted
        plan = resolved.plan.with_case(seed=seed)
        # The same initial weights and dropout stream for every mode of a seed (`build` seeds
        # them); the batch is the feed's, set before every step.
        self.state = build(plan)
        self.feed = Feed(self.fitted, cfg.batch_size, seed, self.device, cfg.heldout_limit)

    @property
    def model(self) -> nn.Module:
        return self.state.model

    @property
    def scaler(self) -> torch.amp.GradScaler:
        return self.state.scaler

    def loss(self, x: torch.Tensor, y: torch.Tensor, mode: Mode | None = None) -> torch.Tensor:
        mode = mode or self.mode
        with mode.context(self.device, forward=True):
            output = self.model(mode.cast_input(x))
            return self.fitted.workload.loss(output, y, "mean")

    def step(self, k: int) -> torch.Tensor:
        """Training step `k` at the schedule's learning rate, the one train step with the
        study's options; returns the loss tensor, unsynchronized."""
        self.state.x, self.state.y = self.feed.train(k)
        for group in self.state.optimizer.param_groups:
            group["lr"] = lr_at(self.cfg, k)
        return train_step(self.state).detach()

    def scale(self) -> torch.Tensor | None:
        """GradScaler's scale as a device tensor (None without a scaler). The private `_scale`
        is read because `get_scale()` syncs, and this is read after every step."""
        return self.scaler._scale if self.scaler.is_enabled() else None

    def evaluate(self) -> tuple[float, float]:
        """Held-out mean loss over every prediction of the split, and accuracy, dropout off."""
        return heldout(self.state, self.feed.heldout(), self.fitted.workload.loss)

    def scaler_check(self, k: int) -> list[dict]:
        """The GradScaler check at step `k` (see the module docstring): one row per parameter."""
        x, y = self.feed.train(k)
        reference, scale = self.reference, float(self.scaler.get_scale())
        self.model.eval()  # dropout off: three gradients of one function
        grads = {}
        for name, mode, mult in (
            ("reference", reference, 1.0),
            ("unscaled", self.mode, 1.0),
            ("scaled", self.mode, scale),
        ):
            self.model.zero_grad(set_to_none=True)
            loss = self.loss(x, y, mode)
            with mode.context(self.device):
                (loss * mult).backward()
            grads[name] = {
                n: p.grad.detach().float() / mult
                for n, p in self.model.named_parameters()
                if p.grad is not None
            }
        self.model.zero_grad(set_to_none=True)
        self.model.train()
        rows = []
        for n, ref in grads["reference"].items():
            bare, scaled = grads["unscaled"][n], grads["scaled"][n]
            live = ref != 0
            # An element that overflowed with the scaler (inf or NaN) is not kept: GradScaler
            # skips such a step. Without the scaler the check's scale is 1, where nothing
            # overflows that training would not.
            held = torch.isfinite(scaled) & (scaled != 0)
            rows.append(
                {
                    "step": k,
                    "tensor": n,
                    "numel": ref.numel(),
                    "scale": scale,
                    # The one definition of a norm share (`underflow.norm_share`).
                    "lost_unscaled": norm_share(ref, live & (bare == 0)),
                    "lost_scaled": norm_share(ref, live & ~held),
                    "kept_by_scaler": norm_share(ref, live & (bare == 0) & held),
                    **element_shares(ref, scale),
                    "overflow": bool(not torch.isfinite(scaled).all()),
                }
            )
        return rows


def element_shares(reference: torch.Tensor, scale: float) -> dict[str, float]:
    """`zero_unscaled` / `zero_scaled`: the share of `reference`'s (fp32's gradient's) non-zero
    elements that float16 rounds to zero, without the scaler and with the loss multiplied by
    `scale`; `subnormal_unscaled` / `subnormal_scaled`: the share it keeps as subnormals. Read off
    fp32's values: a tensor whose gradient autocast keeps in float32 would not lose them, which
    the norm share beside it (measured on float16's own gradient) shows."""
    bare, scaled = fp16_cast_shares(reference), fp16_cast_shares(reference, scale)
    return {
        "zero_unscaled": bare["zero"],
        "zero_scaled": scaled["zero"],
        "subnormal_unscaled": bare["subnormal"],
        "subnormal_scaled": scaled["subnormal"],
    }


def _eval_steps(cfg: QualityConfig) -> list[int]:
    return sorted({*range(0, cfg.steps, cfg.eval_every), cfg.steps})


def _check_steps(cfg: QualityConfig) -> set[int]:
    if cfg.check_points == 0:
        return set()
    evals = _eval_steps(cfg)
    picks = {
        round(i * (len(evals) - 1) / max(cfg.check_points - 1, 1)) for i in range(cfg.check_points)
    }
    return {evals[i] for i in picks}


def past_best(heldout: list[float], patience: int) -> bool:
    """True once the last `patience` held-out losses brought no new best (none strictly below
    every loss before them): the study's stopping rule (docs/quality.md). A run stopped by it has
    the same best as the whole budget would have given, unless a later evaluation would have gone
    lower still."""
    if patience == 0 or len(heldout) <= patience:
        return False
    return min(heldout[-patience:]) >= min(heldout[:-patience])


def train(cfg: QualityConfig, resolved: Resolved, seed: int) -> dict[str, list[dict]]:
    """One run, as rows of the study's tables (`bench.quality.tables`): `curves` (one per
    evaluation), `checks` (scaled fp16 only) and one `runs` row with its status and why it
    stopped. A run whose loss goes non-finite stops there, `diverged`; with `patience`, a run
    past its best stops there too, and takes a last GradScaler check where checks were left."""
    started = time.perf_counter()
    run = Run(cfg, resolved, seed)
    key = {"mode": resolved.mode.name, "seed": seed}
    curve, checks_rows = [], []
    losses: list[torch.Tensor] = []
    scales: list[torch.Tensor] = []
    status, diverged_at, skipped, last_scale = "ok", None, 0, None
    checks_at = _check_steps(cfg) if run.mode.scale_loss else set()
    stopped = tables.BUDGET
    prev = 0
    for k in _eval_steps(cfg):
        while prev < k:
            losses.append(run.step(prev))
            s = run.scale()
            if s is not None:
                scales.append(s.detach().clone())
            prev += 1
        train_loss = float("nan")
        if losses:
            values = torch.stack(losses).float()
            bad = (~torch.isfinite(values)).nonzero()
            if len(bad):
                status, diverged_at = "diverged", k - len(losses) + int(bad[0, 0]) + 1
            train_loss = values.mean().item()
        if scales:
            seq = torch.stack(([last_scale] if last_scale is not None else []) + scales)
            skipped += int(skipped_by_scale(seq).sum().item())
            last_scale = scales[-1]
        losses, scales = [], []
        heldout_loss, accuracy = run.evaluate()
        if not math.isfinite(heldout_loss) and status == "ok":
            status, diverged_at = "diverged", k
        curve.append(
            {
                **key,
                "step": k,
                "train_loss": train_loss,
                "heldout_loss": heldout_loss,
                "heldout_accuracy": accuracy,
                "lr": lr_at(cfg, max(k - 1, 0)),
                "skipped_steps": skipped,
                "elapsed_s": time.perf_counter() - started,
            }
        )
        if status != "ok":
            stopped = tables.DIVERGED
            break
        done = k < cfg.steps and past_best([c["heldout_loss"] for c in curve], cfg.patience)
        if k in checks_at or (done and any(c > k for c in checks_at)):
            checks_rows += [{**key, **r} for r in run.scaler_check(k)]
        if done:
            stopped = tables.PAST_BEST
            break
    return {
        "curves": curve,
        "checks": checks_rows,
        "runs": [
            {
                **key,
                "status": status,
                "diverged_at_step": diverged_at,
                "skipped_steps": skipped,
                "steps": prev,
                "stopped": stopped,
                "wall_s": time.perf_counter() - started,
                "error": "",
            }
        ],
    }


def safe_train(
    cfg: QualityConfig, mode_name: str, seed: int, resolve: Callable[[], Resolved]
) -> dict[str, list[dict]]:
    """`train` on what `resolve()` gives, with a fault (out of memory, an error, resolving
    included) as a run row with its status: the study goes on."""
    try:
        return train(cfg, resolve(), seed)
    except Exception as exc:  # one run's fault is a row, not the study's end
        info = fault(exc)
        row = {"mode": mode_name, "seed": seed, "status": info["status"], "error": info["error"]}
        return {"curves": [], "checks": [], "runs": [row]}


def time_step(cfg: QualityConfig, resolved: Resolved) -> dict[str, float]:
    """The mode's training step (the first seed's), timed alone by the harness's timing
    function after a warm-up: median, p10, p90 and IQR in ms, and on a GPU the memory the run
    reserved, a held-out evaluation included (what packing runs side by side sizes from)."""
    if cfg.device == "cuda":  # the reservation this mode makes, not the last one's cache
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    run = Run(cfg, resolved, cfg.seeds[0])
    counter = iter(range(10**9))
    samples = time_settled(
        {"step": lambda: run.step(next(counter))},
        warmup=10,
        steps=cfg.timing_steps,
        clock=clock_for(cfg.device),
        watch=watch(run.state),
    )["step"]
    stats = summarize(samples)
    run.evaluate()  # its batches count in the peak too
    return {
        "mode": resolved.mode.name,
        "step_ms": stats["median"],
        "step_ms_p10": stats["p10"],
        "step_ms_p90": stats["p90"],
        "step_ms_iqr": stats["iqr"],
        "timed_steps": len(applied(samples)),  # the steps that applied their update
        "peak_gib": torch.cuda.max_memory_reserved() / GIB if cfg.device == "cuda" else None,
        "step_options": run.state.options.describe(),
    }
