"""`ampbench sweep`: a user's script under every mode and seed (`bench.ownloop.job`)."""

from __future__ import annotations

import argparse

from bench.faults import UsageError
from bench.measure import env
from bench.ownloop import job as sweep
from bench.ownloop import render as own_loop
from bench.ownloop.config import SweepConfig, default_modes
from bench.publish import render
from bench.verdicts import training


def run(args: argparse.Namespace) -> int:
    script = list(args.script)
    if script[:1] == ["--"]:
        script = script[1:]
    if not script:
        raise UsageError("no script: give the command after --, e.g. -- python train.py")
    device = env.device(args.device)
    try:
        cfg = SweepConfig(
            script=tuple(script), modes=tuple(args.modes or default_modes(device)),
            seeds=tuple(args.seeds), metric=args.metric, timeout_s=args.timeout_s, device=device,
            workers=args.workers, timed_seeds=args.timed_seeds, budget_s=args.budget,
            max_seeds=args.max_seeds,
            expected_drop=args.expected_drop or training.LEARNED_DROP,
            **{k: v for k in ("min_effect", "confidence") if (v := getattr(args, k)) is not None},
        )  # fmt: skip
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    run_dir = sweep.run(cfg, results_dir=args.results_dir, tag=args.tag, command=args.command_line)
    render.after_job(run_dir)
    path = own_loop.write(run_dir)
    print(path.read_text())
    print(run_dir)
    # 1 when a run failed (an unsupported mode is an answer, not a failure), as `run` does.
    return 1 if own_loop.failed_runs(run_dir) else 0
