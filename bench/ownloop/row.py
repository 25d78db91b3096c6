"""What a probe has read of a user's run (`Run`), and the one flat timing row it becomes
(`build_row`, case `own:<model class>`); a figure it could not measure is left out with a note."""

from __future__ import annotations

import math
import socket
from dataclasses import dataclass, field

import torch
from torch import nn

from bench.measure.memory import GIB
from bench.measure.stats import applied, is_noisy, phase_columns
from bench.measure.timing import SKIPPED, Clock
from bench.modes.mode import dtype_name, tf32_flags
from bench.ownloop.contract import Settings
from bench.ownloop.counting import Counter
from bench.ownloop.marks import PHASES, StepRecord
from bench.store import results
from bench.store.run_env import Ceilings

FLOAT8_NOTE = (
    "no MFU: the model has float8 Linears, and a share of one ceiling would mislead (their "
    "matmuls run at float8's, the rest at bf16's)"
)


def _number(value: object) -> float:
    return float(value.detach().float().item()) if torch.is_tensor(value) else float(value)


@dataclass
class Run:
    model: nn.Module
    optimizer: torch.optim.Optimizer
    device: str
    seed: int
    batch_size: int | None
    warmup: int
    every: int
    settings: Settings | None = None
    mode: str = "custom"
    error: str = ""
    steps: int = 0
    optimizer_steps: int = 0
    skipped: int = 0
    samples: dict[str, list[float]] = field(default_factory=lambda: {p: [] for p in PHASES})
    totals: list[float] = field(default_factory=list)
    peaks: dict[str, float] = field(default_factory=dict)
    scale_rows: list[dict] = field(default_factory=list)
    census_rows: list[dict] = field(default_factory=list)
    census_ms: list[float] = field(default_factory=list)
    metrics: list[dict] = field(default_factory=list)
    _last_scale: float | None = None
    nonfinite: str = ""
    """Why the scale stopped being a scale (0, inf or NaN, and the step), or empty: from then on
    GradScaler skips every step, and the run is `nonfinite`."""
    lr: float = math.nan

    def __post_init__(self) -> None:
        # The learning rate as the run starts: a schedule has moved it by the end.
        groups = self.optimizer.param_groups
        self.lr = float(groups[0].get("lr", math.nan)) if groups else math.nan

    @property
    def model_name(self) -> str:
        return f"{results.OWN_MODEL}{type(self.model).__name__}"

    def set_settings(self, settings: Settings, inputs: tuple = ()) -> None:
        self.settings, self.mode = settings, settings.mode()
        self.note_batch(inputs)

    def note_batch(self, inputs: object) -> None:
        """The batch size, where none was handed in: the first dimension of the first tensor
        among the forward's inputs (or a framework's batch: a tuple, a list, a dict)."""
        if self.batch_size is not None:
            return
        items = inputs.values() if isinstance(inputs, dict) else inputs
        if torch.is_tensor(items):
            items = (items,)
        if not isinstance(items, (tuple, list, type({}.values()))):
            return
        first = next((a for a in items if torch.is_tensor(a) and a.dim() > 0), None)
        if first is not None:
            self.batch_size = int(first.shape[0])

    def add(self, rec: StepRecord, clock: Clock) -> None:
        """A step whose marks have times."""
        self.steps += 1
        self.optimizer_steps += rec.stepped
        skipped = False
        if rec.scale is not None:
            scale = float(rec.scale)  # a host copy made at the step's end: no wait
            # accelerate's `optimizer_step_was_skipped`: the scale went down (fused optimizers
            # take the step call and skip inside it), or the step was not called at all.
            dropped = self._last_scale is not None and scale < self._last_scale
            # A scale of 0 (halved past float32's smallest number) or one that is no longer
            # finite never falls again, so "it fell" cannot see the skips that follow: with it
            # the unscaled gradients are inf or NaN and every step is skipped.
            broken = scale == 0 or not math.isfinite(scale)
            if broken and not self.nonfinite:
                self.nonfinite = (
                    f"GradScaler's scale was {scale:g} after step {rec.index}: no step after it "
                    "applies an update"
                )
            skipped = not rec.stepped or dropped or broken
            self.skipped += skipped
            self._last_scale = scale
            shown = scale if math.isfinite(scale) else None  # strict JSON has no inf or NaN
            self.scale_rows.append({"step": rec.index, "scale": shown, "skipped": skipped})
        for phase, gib in rec.peaks.items():
            self.peaks[phase] = max(self.peaks.get(phase, 0.0), gib)
        if rec.timed and len(rec.marks) > 1:
            times = rec.times(clock)
            # A step GradScaler skipped is no training step: timed, but left out of every
            # statistic, as the harness leaves it (`bench.measure.timing.SKIPPED`).
            self.totals.append(SKIPPED if skipped else times.pop("total"))
            for phase in PHASES:
                self.samples[phase].append(SKIPPED if skipped else times.get(phase, 0.0))

    def census(self, rows: list[dict], ms: float) -> None:
        self.census_rows += rows
        self.census_ms.append(ms)

    def log(self, step: int, metrics: dict[str, object]) -> None:
        for name, value in metrics.items():
            if not (torch.is_tensor(value) or isinstance(value, (int, float))):
                raise ValueError(f"probe.log({name}={value!r}): give a number or a tensor")
            self.metrics.append({"step": step, "name": name, "value": value})

    def metric_rows(self) -> list[dict]:
        """The metrics as numbers (tensors read now: the caller has synchronized)."""
        for m in self.metrics:
            m["value"] = _number(m["value"])
        return self.metrics


def _state_gib(run: Run) -> dict[str, float]:
    def gib(tensors: object) -> float:
        return sum(t.numel() * t.element_size() for t in tensors) / GIB

    params = list(run.model.parameters())
    state = [t for s in run.optimizer.state.values() for t in s.values() if torch.is_tensor(t)]
    return {
        "param_gib": gib(params),
        # A gradient has its parameter's shape and dtype; by the time the row is written the
        # loop's zero_grad(set_to_none=True) has usually freed them, so they are sized, not read.
        "grad_gib": gib(p for p in params if p.requires_grad),
        "optim_state_gib": gib(state),
    }


def _mode_columns(run: Run) -> dict[str, object]:
    s = run.settings
    if s is None:
        return {}
    low = s.autocast_dtype or (s.param_dtype if s.param_dtype != torch.float32 else None)
    matmul = {torch.float16: "fp16", torch.bfloat16: "bf16"}.get(low, "tf32" if s.tf32 else "fp32")
    return {
        "autocast_dtype": dtype_name(s.autocast_dtype),
        "param_dtype": dtype_name(s.param_dtype),
        "scale_loss": s.scaler,
        "matmul_dtype": matmul,
        **tf32_flags(),
    }


def _throughput(
    run: Run, row: dict, counter: Counter, ceilings: Ceilings
) -> tuple[dict, list[str]]:
    """samples/s, TFLOP/s and MFU (the share of the measured matmul ceiling of the run's matmul
    dtype), with notes for what is missing."""
    out: dict[str, object] = {}
    notes: list[str] = []
    total_ms = row.get("total_ms")
    if total_ms is None:
        return out, notes
    if run.batch_size:
        out["samples_per_s"] = out["samples_per_s_per_gpu"] = run.batch_size / (total_ms * 1e-3)
    if counter.total is None:
        notes.append(counter.reason or "FLOPs not counted")
        return out, notes
    if counter.fwd is not None:
        out["fwd_gflop"] = counter.fwd / 1e9
        out["bwd_gflop"] = (counter.total - counter.fwd) / 1e9
    out["step_gflop"] = counter.total / 1e9
    out["tflops"] = counter.total / 1e9 / total_ms  # GFLOP per ms is TFLOP per s
    if any("float8" in type(m).__name__.lower() for m in run.model.modules()):
        notes.append(FLOAT8_NOTE)
        return out, notes
    ceiling = ceilings.matmul(row.get("matmul_dtype"))
    if math.isfinite(ceiling) and ceiling > 0:
        out["ceiling_tflops"] = ceiling
        out["mfu_pct"] = out["tflops"] / ceiling * 100
    else:
        where = "the CPU has no matmul ceiling" if run.device == "cpu" else "no ceiling measured"
        notes.append(f"no MFU: {where}")
    return out, notes


def build_row(run: Run, counter: Counter, ceilings: Ceilings) -> tuple[dict, dict]:
    """The run's row and its raw samples (`total` and each phase's), as they stand."""
    n_params = sum(p.numel() for p in run.model.parameters())
    bs = run.batch_size or 1
    row: dict[str, object] = {
        "case_id": f"{run.model_name}_{run.mode}_seed{run.seed}",
        "mode": run.mode, "optimizer": type(run.optimizer).__name__, "batch_size": bs,
        "sizes": {"params": max(n_params, 1)}, "model": run.model_name, "preset": "",
        "device": run.device, "seed": run.seed, "lr": run.lr, "warmup": run.warmup,
        "steps": len(run.totals), "status": "ok", "error": "", "world_size": 1,
        "host": socket.gethostname(), "node_rank": 0, "local_rank": 0, "nodes": 1,
        "global_batch_size": bs, "optimizer_impl": type(run.optimizer).__name__,
        "fp8_linears": "", "probe_steps": run.steps, "optimizer_steps": run.optimizer_steps,
        "skipped_steps": run.skipped, **_mode_columns(run), **_state_gib(run),
    }  # fmt: skip
    notes = []
    samples = {p: v for p, v in run.samples.items() if any(v)}
    if len(applied(run.totals)):
        samples["total"] = list(run.totals)
        row |= phase_columns({p: v for p, v in samples.items() if len(applied(v))})
        row["noisy"] = is_noisy(run.totals)
    elif run.totals:  # every timed step was skipped: no training step to time
        samples["total"] = list(run.totals)
        notes.append(f"no step timed: GradScaler skipped all {len(run.totals)} timed steps")
    else:
        notes.append(f"no step timed: {run.steps} steps, the first {run.warmup} are warm-up")
    more, why = _throughput(run, row, counter, ceilings)
    row |= more
    notes += why
    if run.device == "cuda" and run.peaks:
        for phase, key in (
            ("fwd", "peak_fwd_gib"),
            ("bwd", "peak_bwd_gib"),
            ("step", "peak_opt_gib"),
        ):
            if phase in run.peaks:
                row[key] = run.peaks[phase]
        row["peak_alloc_gib"] = max(run.peaks.values())
    else:
        notes.append("no peak memory: the CPU has no caching allocator to read")
    if run.scale_rows:
        row["grad_scale"] = run.scale_rows[-1]["scale"]
    if run.census_ms:
        row["census_ms"] = sum(run.census_ms) / len(run.census_ms)
        row["census_tensors"] = len({r["tensor"] for r in run.census_rows})
    final = [m for m in run.metrics if m["name"] == "loss"]
    if final:
        row["final_loss"] = _number(final[-1]["value"])
    if run.error:
        row["status"], row["error"] = "error", run.error
    elif run.nonfinite:
        row["status"], row["error"] = "nonfinite", "; ".join([run.nonfinite, *notes])
    elif not len(applied(run.totals)):
        row["status"], row["error"] = "error", "; ".join(notes)
    else:
        row["error"] = "; ".join(notes)
    return row, samples
