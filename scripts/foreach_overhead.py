"""Where the harness's step time and a plain loop's part: one train step timed four ways, on one
train state, alternated, for each Adam (foreach, fused) at one mode and batch size.

- harness: `bench.measure.timing.time_phases` over the harness's phases (an event at each phase
  boundary, one sync after the window), what a row's `total_ms` is;
- window: the same step in a loop with one event pair per window of steps (the overhead check's
  bare loop), the window's time over its step count;
- synced, events: a loop with `torch.cuda.synchronize()` after every step and an event pair
  around each step;
- synced, host: the same loop timed with `time.perf_counter` around each step and its sync (a
  plain loop as users write it to time a step).
Each way also times the optimizer phase alone where it can (harness: its own phase). Prints a
markdown table and writes it, with the raw medians as JSON, under OUT_DIR.

Usage: python scripts/foreach_overhead.py OUT_DIR [--mode bf16-amp] [--batch-size 256]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

from bench.execution import variants
from bench.measure.timing import CudaClock, time_phases
from bench.plan.step import build, train_step
from bench.workloads.registry import make_case


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def ways(state, steps: int) -> dict[str, float]:
    """One pass of the four ways, each a window of `steps` steps; median ms per step."""
    clock = CudaClock()
    phases = variants.prepare(state).phases
    out: dict[str, float] = {}
    harness = time_phases(phases, warmup=2, steps=steps, clock=clock)
    out["harness"] = median(harness["total"])
    out["harness_opt"] = median(harness["step"])

    def window() -> None:
        for _ in range(steps):
            train_step(state)

    timed = time_phases({"w": window}, warmup=1, steps=3, clock=clock)
    out["window"] = median(timed["w"]) / steps

    ev: list[float] = []
    host: list[float] = []
    for _ in range(steps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        start.record()
        train_step(state)
        end.record()
        torch.cuda.synchronize()
        host.append((time.perf_counter() - t0) * 1e3)
        ev.append(start.elapsed_time(end))
    out["synced_events"] = median(ev)
    out["synced_host"] = median(host)
    return out


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("out", type=Path)
    p.add_argument("--mode", default="bf16-amp")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for optimizer in ("foreach", "fused"):
        case = make_case(
            "mlp",
            "seed",
            mode=args.mode,
            optimizer=optimizer,
            batch_size=args.batch_size,
            device="cuda",
        )
        state = build(case)
        passes = [ways(state, args.steps) for _ in range(args.repeats)]
        row = {"optimizer": optimizer, **{k: median([q[k] for q in passes]) for k in passes[0]}}
        row["passes"] = passes
        rows.append(row)
        del state
        torch.cuda.empty_cache()
    keys = ["harness", "window", "synced_events", "synced_host", "harness_opt"]
    lines = [
        f"{args.mode}, batch {args.batch_size}, {args.steps} steps a window, median of "
        f"{args.repeats} alternated passes (ms per step)",
        "",
        "| optimizer | " + " | ".join(keys) + " |",
        "|---|" + "---|" * len(keys),
    ]
    for r in rows:
        lines.append(f"| {r['optimizer']} | " + " | ".join(f"{r[k]:.4g}" for k in keys) + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    (args.out / "foreach_overhead.md").write_text(text)
    (args.out / "foreach_overhead.json").write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
