"""`ampbench sweep -- python train.py ARGS`: a user's own script over modes and seeds
(docs/own-loop.md). `recipes`, its old name, still runs it (`OLD_NAME`)."""

from __future__ import annotations

import argparse

from bench.cli import options as o

NAME = "sweep"
OLD_NAME = "recipes"  # `bench.cli.main` runs it as `sweep`, saying so on stderr


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        NAME,
        help="your own training script under every mode and seed, judged",
        description="Runs the command after `--` once per mode and seed, in interleaved "
        "rounds, with AMPBENCH_MODE, AMPBENCH_SEED and AMPBENCH_OUT set for the probe or "
        "callback inside it (docs/own-loop.md); writes the runs' rows and sweep.md.",
    )
    p.add_argument(
        "--modes",
        type=o.MODE_NAMES,
        help="the modes (default: fp32, tf32, fp16 with GradScaler, bf16 autocast; on the "
        "CPU those it runs)",
    )
    p.add_argument(
        "--seeds",
        type=o.SEEDS,
        default=(0, 1, 2),
        help="one round per seed (default: 0,1,2)",
    )
    p.add_argument(
        "--metric",
        help="the logged metric the training judge reads, lower is better (default: the "
        "first of val_loss, eval_loss, loss that every run logged)",
    )
    p.add_argument(
        "--expected-drop",
        type=o.FRACTION,
        help="the share below its value before training that fp32's best must reach for the "
        "judge to say it learned (default 0.25; a fine-tuning script declares less, e.g. 0.1)",
    )
    p.add_argument(
        "--timeout-s",
        type=o.POSITIVE_FLOAT,
        default=3600.0,
        help="stop a run after this many seconds (a `timeout` row)",
    )
    p.add_argument("--workers", type=o.NON_NEGATIVE, default=0,
                   help="runs side by side for the seeds not timed alone (default 0: auto, "
                   "by CPU cores and the GPU's free memory; one at a time on the CPU)")  # fmt: skip
    p.add_argument("--timed-seeds", type=o.POSITIVE, default=3,
                   help="the first K seeds of each mode run alone and give the step times, the "
                   "speed rule's first look (default 3; each later look times an undecided "
                   "mode alone once more)")  # fmt: skip
    p.add_argument(
        "--max-seeds",
        type=o.POSITIVE,
        help="add seeds in looks to fp32 and the undecided modes, up to N each",
    )
    p.add_argument("--budget", type=o.DURATION, default=0,
                   help="time the command may run (900s, 15m, 1h): no look starts that would "
                   "end past it (--max-seeds, else 8)")  # fmt: skip
    o.add_verdict_settings(p)
    o.add_device(p)
    o.add_new_folder(p, debug=False)
    p.add_argument("script", nargs=argparse.REMAINDER, help="-- then the command that trains")
