"""Small stored run folders written by hand: rows, raw samples and env.json of timing runs, for
the tests of what reads folders (figures, index, history, export). Nothing here measures."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from bench import results
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
    total (relative spread `spread`), and an env.json."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for row in rows:
        results.append_jsonl(folder / results.ROWS, row)
        if row["status"] == "ok":
            total = row["total_ms"] * (1 + spread * rng.standard_normal(20))
            samples = {"total": [float(x) for x in total]}
            results.append_jsonl(
                folder / results.SAMPLES, {"case_id": row["case_id"], "samples_ms": samples}
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
