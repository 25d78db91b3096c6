"""The numerics study: `python -m bench numerics` (or `./run_bench.sh numerics`).

It writes one folder, `results/<UTC timestamp>_<gpu>_<sha>_numerics/`, holding:
- `audit.csv` (tensor x mode dtypes), `audit_ops.csv` (every aten op with its dtypes),
  `audit.json` (the autograd chain to fc1.weight per mode, and the GradScaler error paths);
- `census.csv`: underflow of every gradient tensor against an fp32 reference, per batch size,
  mode and checkpoint of an fp16 + GradScaler training trajectory;
- `histogram.csv`, `fp16_fate.csv`, `histogram.png`: the Micikevicius et al. histogram;
- `convergence_steps.csv` (every step's loss and scale), `convergence_evals.csv` (held-out),
  `convergence_runs.csv` (measured step time per run), `summary.csv`, `loss_curves.png`,
  `scale.png`;
- `env.json` and `report.md`, which ends with the computed Answer.
Nothing here runs inside a timed region of the core harness.

While the study runs, each finished job's rows are kept in `jobs/<job>.json`, so that an
interrupted study (a time limit, a lost machine, Ctrl-C) goes on where it stopped with
`numerics --resume <folder>`; the folder is removed once the tables above are written.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from bench import numerics_report, plots
from bench.audit import audit_mode, error_paths
from bench.case import Case
from bench.model import ModelSize
from bench.modes import MODES
from bench.parallel import run_all
from bench.training import Job, run_job, smoothed


@dataclass(frozen=True, kw_only=True)
class NumericsConfig:
    device: str
    size: ModelSize
    modes: tuple[str, ...]
    census_batch_sizes: tuple[int, ...]
    checkpoints: tuple[int, ...]
    histogram_batch: int
    conv_batch_sizes: tuple[int, ...]
    seeds: tuple[int, ...]
    steps: int
    long_steps: int
    eval_every: int
    heldout: int
    noise: float
    optimizer: str
    lr: float
    loss_mult: float
    reduction: str
    init_scale: float
    workers: int

    def record(self) -> dict[str, object]:
        """The settings as env.json keeps them: flat, the model size's fields inline."""
        flat = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        del flat["size"]
        return {**flat, **dataclasses.asdict(self.size)}

    @classmethod
    def from_record(cls, record: dict, *, workers: int) -> NumericsConfig:
        """The settings of a study from its env.json, to resume it (possibly on other GPUs)."""
        size = ModelSize(**{f.name: record[f.name] for f in dataclasses.fields(ModelSize)})
        names = [f.name for f in dataclasses.fields(cls) if f.name not in ("size", "workers")]
        kept = {n: tuple(record[n]) if isinstance(record[n], list) else record[n] for n in names}
        return cls(size=size, workers=workers, **kept)

    def case(self, mode: str, batch_size: int, seed: int) -> Case:
        return Case.of(
            self.size,
            mode=mode,
            optimizer=self.optimizer,
            batch_size=batch_size,
            device=self.device,
            seed=seed,
            lr=self.lr,
            loss_mult=self.loss_mult,
            reduction=self.reduction,
            init_scale=self.init_scale,
        )

    def jobs(self) -> list[Job]:
        out = [
            Job(
                kind="census",
                case=self.case("fp16-amp", b, self.seeds[0]),
                steps=0,
                noise=self.noise,
                checkpoints=self.checkpoints,
                histogram=b == self.histogram_batch,
            )
            for b in self.census_batch_sizes
        ]
        for b in self.conv_batch_sizes:
            for mode in self.modes:
                for seed in self.seeds:
                    # One fp16 + GradScaler run goes on for `long_steps`, to show the scale grow
                    # (GradScaler doubles it after 2000 clean steps in a row).
                    long = (mode, b, seed) == ("fp16-amp", self.conv_batch_sizes[0], self.seeds[0])
                    steps = max(self.steps, self.long_steps) if long else self.steps
                    out.append(
                        Job(
                            kind="convergence",
                            case=self.case(mode, b, seed),
                            steps=steps,
                            noise=self.noise,
                            eval_every=self.eval_every,
                            heldout=self.heldout,
                        )
                    )
        return out


SHORT_LR = 3e-4
"""Adam's lr in the short study: the best of the H200 sweep in results/lr-sweep/ (the question's
1e-3 learns the task too, but ends with a far higher loss on this 16000-wide model)."""


def short_config(
    *, device: str, size: ModelSize, modes: list[str], batch_sizes: list[int], optimizer: str
) -> NumericsConfig:
    """The short study a core run can include (`run --numerics`): the audit, the census at the
    run's batch sizes at steps 0 and 100, and 200 convergence steps of every mode at the smallest
    batch size, one seed, in the timing process itself (workers=1), so that anything it left
    behind would show in the timings that follow."""
    return NumericsConfig(
        device=device,
        size=size,
        modes=tuple(modes),
        census_batch_sizes=tuple(batch_sizes),
        checkpoints=(0, 100),
        histogram_batch=min(batch_sizes),
        conv_batch_sizes=(min(batch_sizes),),
        seeds=(0,),
        steps=200,
        long_steps=0,
        eval_every=50,
        heldout=8192 if device == "cuda" else 256,
        noise=2.0,
        optimizer=optimizer,
        lr=SHORT_LR,
        loss_mult=1.0,
        reduction="mean",
        init_scale=1.0,
        workers=1,
    )


def _describe(job: Job) -> str:
    c = job.case
    return f"{job.kind} {c.mode} b{c.batch_size} s{c.seed} ({job.steps} steps)"


JOBS_DIR = "jobs"


def job_key(job: Job) -> str:
    """A job's name in `jobs/`; unique within one study (its settings are fixed in env.json)."""
    c = job.case
    return f"{job.kind}_{c.mode}_b{c.batch_size}_s{c.seed}_{job.steps}"


def _keep(run_dir: Path, job: Job, out: dict[str, list[dict]]) -> None:
    folder = run_dir / JOBS_DIR
    folder.mkdir(exist_ok=True)
    tmp = folder / f".{job_key(job)}.tmp"
    tmp.write_text(json.dumps(out))
    tmp.replace(folder / f"{job_key(job)}.json")  # atomic: a kill never leaves half a file


def _kept(run_dir: Path, jobs: list[Job]) -> dict[str, dict[str, list[dict]]]:
    keys = {job_key(j) for j in jobs}
    folder = run_dir / JOBS_DIR
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    return {f.stem: json.loads(f.read_text()) for f in files if f.stem in keys}


def summarize_runs(
    steps: pd.DataFrame, evals: pd.DataFrame, runs: pd.DataFrame, horizon: int
) -> pd.DataFrame:
    """Per run, at the common horizon: final smoothed loss, held-out loss and accuracy, non-finite
    and skipped steps, and steps and seconds to reach the final loss of fp32 with the same batch
    size and seed."""
    keys = ["mode", "batch_size", "seed"]
    steps = steps[steps["step"] < horizon].sort_values([*keys, "step"]).copy()
    steps["smooth"] = smoothed(steps)
    last = steps.groupby(keys).tail(1).set_index(keys)
    rows = []
    for key, group in steps.groupby(keys):
        ev = evals[(evals[keys] == pd.Series(key, index=keys)).all(axis=1)]
        at = ev[ev["step"] == horizon]
        rows.append(
            {
                **dict(zip(keys, key, strict=True)),
                "optimizer": group["optimizer"].iloc[0],
                "final_loss": last.loc[key, "smooth"],
                "heldout_loss": at["heldout_loss"].iloc[0] if len(at) else float("nan"),
                "heldout_acc": at["heldout_acc"].iloc[0] if len(at) else float("nan"),
                "nonfinite_steps": int((~np.isfinite(group["loss"].to_numpy(float))).sum()),
                "skipped_steps": int(group["skipped"].sum()),
                "final_scale": group["scale"].iloc[-1],
            }
        )
    out = pd.DataFrame(rows).merge(runs[[*keys, "step_ms"]], on=keys, how="left")
    # The target of a run is what fp32 reached at the end with the same seed: same initial
    # weights, same batches.
    target = out[out["mode"] == "fp32"].set_index(["batch_size", "seed"])["final_loss"]
    out["target_loss"] = [
        target.get((b, sd), float("nan"))
        for b, sd in zip(out["batch_size"], out["seed"], strict=True)
    ]
    first_hit = (
        steps.merge(out[[*keys, "target_loss"]], on=keys)
        .query("smooth <= target_loss")
        .groupby(keys)["step"]
        .min()
    )
    out["steps_to_target"] = [
        int(first_hit[k]) + 1 if k in first_hit.index else None
        for k in zip(out["mode"], out["batch_size"], out["seed"], strict=True)
    ]
    out["time_to_target_s"] = [
        n * ms / 1e3 if n is not None else float("nan")
        for n, ms in zip(out["steps_to_target"], out["step_ms"], strict=True)
    ]
    return out.sort_values(["batch_size", "mode", "seed"]).reset_index(drop=True)


def run(cfg: NumericsConfig, run_dir: Path) -> None:
    """Run the whole study into `run_dir` (which exists and holds env.json), or what is left of
    it: the audit and the jobs already kept there are not run again. Writes the tables; `render`
    makes the figures and the report from them."""
    if not (run_dir / "audit.json").is_file():
        _audit(cfg, run_dir)
    jobs = cfg.jobs()
    kept = _kept(run_dir, jobs)
    if kept:
        print(
            f"ampbench: {len(kept)} of {len(jobs)} jobs already done, running the rest",
            file=sys.stderr,
            flush=True,
        )
    if torch.cuda.is_available():
        torch.cuda.empty_cache()  # the audit's memory, before GPU 0 is shared with a worker
    pending = [j for j in jobs if job_key(j) not in kept]
    fresh = run_all(
        run_job,
        pending,
        workers=cfg.workers,
        cost=lambda j: j.cost,
        describe=_describe,
        on_done=lambda job, out: _keep(run_dir, job, out),
    )
    done = {**kept, **{job_key(j): out for j, out in zip(pending, fresh, strict=True)}}
    outputs = [done[job_key(j)] for j in jobs]  # in the jobs' order, resumed or not
    tables: dict[str, list[dict]] = {}
    for out in outputs:
        for name, rows in out.items():
            tables.setdefault(name, []).extend(rows)
    frames = {name: pd.DataFrame(rows) for name, rows in tables.items()}
    for name, file in (
        ("failed", "failed.csv"),
        ("census", "census.csv"),
        ("histogram", "histogram.csv"),
        ("fp16_fate", "fp16_fate.csv"),
        ("steps", "convergence_steps.csv"),
        ("evals", "convergence_evals.csv"),
        ("runs", "convergence_runs.csv"),
    ):
        frames.get(name, pd.DataFrame()).to_csv(run_dir / file, index=False)
    summary = summarize_runs(frames["steps"], frames["evals"], frames["runs"], cfg.steps)
    summary.to_csv(run_dir / "summary.csv", index=False)
    shutil.rmtree(run_dir / JOBS_DIR)  # every row is in the tables now


def _audit(cfg: NumericsConfig, run_dir: Path) -> None:
    tensor_rows, op_rows, chains = [], [], {}
    audit_case = cfg.case("fp32", min(cfg.census_batch_sizes), cfg.seeds[0])
    for mode in MODES:
        t, o, chain = audit_mode(Case(**{**audit_case.axes(), "mode": mode}))
        tensor_rows += t
        op_rows += o
        chains[mode] = chain
    errors = error_paths(audit_case)
    pd.DataFrame(tensor_rows).to_csv(run_dir / "audit.csv", index=False)
    pd.DataFrame(op_rows).to_csv(run_dir / "audit_ops.csv", index=False)
    (run_dir / "audit.json").write_text(
        json.dumps({"chain_to_fc1_weight": chains, "error_paths": errors}, indent=2) + "\n"
    )
    print("ampbench: dtype audit written", file=sys.stderr, flush=True)


def load(run_dir: Path) -> dict[str, object]:
    """Every table of a numerics folder, as DataFrames, plus audit.json."""
    names = ["audit", "census", "histogram", "fp16_fate", "summary", "failed"]
    out: dict[str, object] = {n: _read(run_dir / f"{n}.csv") for n in names}
    out["audit_json"] = json.loads((run_dir / "audit.json").read_text())
    return out


def render(run_dir: Path, env: dict) -> None:
    """Figures and report.md of a numerics folder, from its CSV files alone."""
    steps = _read(run_dir / "convergence_steps.csv")
    plots.histogram(_read(run_dir / "histogram.csv"), run_dir / "histogram.png")
    plots.loss_curves(steps, env["numerics_config"]["steps"], run_dir / "loss_curves.png")
    plots.scale(steps, run_dir / "scale.png")
    (run_dir / "report.md").write_text(numerics_report.render(load(run_dir), env))


def _read(path: Path) -> pd.DataFrame:
    try:
        return pd.read_csv(path)
    except pd.errors.EmptyDataError:  # an empty table (no failures, no histogram)
        return pd.DataFrame()


def gpu_count() -> int:
    return torch.cuda.device_count() if torch.cuda.is_available() else 0
