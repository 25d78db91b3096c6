"""Small stored run folders written by hand: rows, raw samples and env.json of timing runs, for
the tests of what reads folders (figures, index, history, export). Nothing here measures."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from bench.store import results
from tests.conftest import tiny_case


def timing_row(*, fused: bool = False, total_ms: float = 10.0, **axes: object) -> dict:
    """A passing row of a tiny CPU case with round figures; `fused`: a variant that timed only
    the whole step (no phase columns), as `cudagraph` does."""
    case = tiny_case(**axes)
    row = {
        "case_id": case.case_id,
        **case.axes(),
        "status": "ok",
        "error": "",
        "total_ms": total_ms,
        "total_ms_iqr": total_ms / 50,
        "samples_per_s": case.batch_size / total_ms * 1e3,
        "tflops": 0.5,
        "floor_ms": total_ms * 0.6,
        "pct_of_floor": 60.0,
        "peak_alloc_gib": math.nan,  # the CPU reports no allocator peaks
        "param_gib": 0.25,
        "grad_gib": 0.25,
        "optim_state_gib": 0.5,
        "act_gib": 0.1 * case.batch_size / 8,
        "output_dtype": "float32",
        "loss_dtype": "float32",
        "param_grad_dtype": "float32",
    }
    if not fused:
        for phase, share in (("fwd", 0.3), ("bwd", 0.5), ("step", 0.2)):
            row[f"{phase}_ms"] = total_ms * share
            row[f"{phase}_ms_iqr"] = total_ms * share / 50
    return row


def write_run(
    folder: Path,
    rows: list[dict],
    *,
    gpu: str = "cpu",
    started: str = "2026-11-29T10:00:00+00:00",
    commit: str | None = None,
    spread: float = 0.01,
    seed: int = 0,
) -> Path:
    """A finished timing run in `folder`: its rows, 20 raw samples per case around each row's
    total (relative spread `spread`) in 10 timed windows of 2 steps (enough for `compare` to
    judge a grid of 12 cases: Holm's correction across them asks 6 rounds a side), and an
    env.json."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for row in rows:
        results.append_jsonl(folder / results.ROWS, row)
        if row["status"] == "ok":
            total = row["total_ms"] * (1 + spread * rng.standard_normal(20))
            samples = {"total": [float(x) for x in total]}
            windows = {"total": [samples["total"][i : i + 2] for i in range(0, 20, 2)]}
            results.append_jsonl(
                folder / results.SAMPLES,
                {"case_id": row["case_id"], "samples_ms": samples, "repeats_ms": windows},
            )
    env = {
        "device": "cpu" if gpu == "cpu" else "cuda",
        "gpu": gpu,
        "torch": "2.99.0",
        "commit": commit,
        "dirty": False if commit else None,
        "started": started,
        "ended": started,
        "command": "python -m bench run",
        "run_name": folder.name,
        "expected_cases": len(rows),
        "config": {
            "preset": "tiny",
            "modes": sorted({r["mode"] for r in rows}),
            "optimizers": sorted({r["optimizer"] for r in rows}),
            "variants": sorted({r["variant"] for r in rows}),
            "batch_sizes": sorted({r["batch_size"] for r in rows}),
        },
    }
    results.write_env(folder, env)
    return folder


def small_grid(*, total_ms: float = 10.0, **axes: object) -> list[dict]:
    """fp32, tf32 and bf16-amp at batch 8 and 32 with two optimizers (fused 10% faster): 12
    passing rows."""
    out = []
    for bs in (8, 32):
        for opt in ("foreach", "fused"):
            for mode, speed in (("fp32", 1.0), ("tf32", 2.0), ("bf16-amp", 3.0)):
                ms = total_ms * bs / 8 / speed * (0.9 if opt == "fused" else 1.0)
                out.append(timing_row(mode=mode, optimizer=opt, batch_size=bs, total_ms=ms, **axes))
    return out


def write_numerics(
    folder: Path,
    *,
    ended: bool = True,
    started: str = "2026-11-29T12:00:00+00:00",
    failed: int = 0,
    kept: int = 0,
    **cfg: object,
) -> Path:
    """A numerics study's folder as the index reads it: env.json (one mode, one batch size, one
    seed: 2 jobs, unless `cfg` says otherwise), a failed.csv of `failed` rows, `kept` job files
    of an unfinished study and a report.md. No tables of results."""
    folder.mkdir(parents=True)
    env = {
        "device": "cuda",
        "gpu": "NVIDIA H200",
        "torch": "2.99.0",
        "commit": "0157d671219512057e5c025380cfbe72d7f4bc0a",
        "dirty": False,
        "started": started,
        "numerics_config": {
            "modes": ["fp32"],
            "conv_batch_sizes": [1024],
            "census_batch_sizes": [1024],
            "seeds": [0],
            "steps": 300,
            "long_steps": 0,
            "lr": 0.001,
            "workers": 2,
            "input_size": 1024,
            "hidden_size": 16000,
            "num_classes": 2000,
            **cfg,
        },
    }
    if ended:
        env["ended"] = started
    results.write_env(folder, env)
    # An empty table may have no header at all.
    rows = "".join(f"convergence,fp32,1024,{i},error,boom\n" for i in range(failed))
    (folder / "failed.csv").write_text(
        "kind,mode,batch_size,seed,status,error\n" + rows if rows else ""
    )
    if kept:
        (folder / "jobs").mkdir()
        for i in range(kept):
            (folder / "jobs" / f"job{i}.json").write_text("{}\n")
    (folder / results.REPORT).write_text("# numerics\n")
    return folder


def write_maxbatch(
    folder: Path,
    trials: list[tuple[str, int, str]],
    *,
    started: str = "2026-11-29T15:00:00+00:00",
    gpu: str = "cpu",
) -> Path:
    """A finished largest-batch search (on the CPU unless `gpu` names one): `trials` as (mode,
    batch size, status)."""
    folder.mkdir(parents=True)
    modes = sorted({mode for mode, _, _ in trials})
    results.write_env(
        folder,
        {
            "device": "cpu" if gpu == "cpu" else "cuda",
            "gpu": gpu,
            "started": started,
            "ended": started,
            "maxbatch_config": {
                "preset": "tiny",
                "modes": modes,
                "variants": ["eager"],
                "optimizer": "fused",
                "start": 8,
                "limit": 64,
            },
        },
    )
    for mode, batch_size, status in trials:
        row = {"mode": mode, "variant": "eager", "batch_size": batch_size, "status": status}
        results.append_jsonl(folder / "trials.jsonl", row)
    return folder


def write_save(
    path: Path, *, optimizer: str = "fused", commit: str = "abcdef0123", when: str = ""
) -> Path:
    """A pytest-benchmark save of two benchmarks (fp32 and bf16-amp, batch 1024) at `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    extra = {"preset": "seed", "batch_size": 1024, "optimizer": optimizer, "gpu": "NVIDIA H200"}
    data = {
        "machine_info": {},
        "commit_info": {"id": commit},
        "datetime": when or "2026-11-29T16:00:00+00:00",
        "benchmarks": [{"extra_info": {**extra, "mode": m}} for m in ("fp32", "bf16-amp")],
    }
    path.write_text(json.dumps(data))
    return path
