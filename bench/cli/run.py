"""`ampbench run` (the default command): time every case of a grid into a new results folder,
or finish an interrupted one (`--resume`)."""

from __future__ import annotations

import argparse
import os
import sys

from bench.cases import grid
from bench.cli import argv, fields, ranks
from bench.cli import options as o
from bench.faults import Interrupted

NAME = "run"


def add(sub: argparse._SubParsersAction) -> None:
    r = sub.add_parser(NAME, help="time every case of a grid into a new results folder (default)")
    fields.add(r, grid.RunConfig, ("model",))
    o.add_preset(r)
    o.add_sizes(r)
    fields.add_axes(r)
    fields.add(r, grid.RunConfig, ("world_size",))
    r.add_argument(
        "--oversubscribe",
        action="store_true",
        help="with --gpus N on the CPU: start N gloo processes although N exceeds the CPU cores",
    )
    r.add_argument(
        "--collective-timeout",
        type=o.POSITIVE_FLOAT,
        default=300.0,
        help="seconds a collective may take before the case fails as `timeout` (default 300)",
    )
    o.add_device(r)
    how = ("full", "steps", "warmup", "repeats", "min_repeats", "rounds", "seed", "overhead",
           "numerics")  # fmt: skip
    fields.add(r, grid.RunConfig, how)
    o.add_results_dir(r, "parent folder of run folders")
    o.add_tag(r)
    o.add_debug(r)
    o.add_resume(
        r,
        "finish an interrupted run with its recorded grid: run only its missing cases "
        "(no other option may be given, but --force, --gpus, --oversubscribe and --debug)",
    )


def command(args: argparse.Namespace) -> int:
    from bench.execution import distributed, launch  # pandas, torch: none at parse time

    world = ranks.world(args)
    if world is None:  # this process only launches the ranks
        keep = ["--collective-timeout", str(args.collective_timeout)]
        return launch.launch(args.world_size, args.argv, keep=keep)
    try:
        run_dir, code = _session(args, world)
    except Interrupted as exc:  # Ctrl-C or SIGTERM: the report of the cases kept, then the line
        if world.leader and exc.folder is not None and exc.folder.is_dir():
            from bench.publish import render  # pandas: none at parse time

            render.after_job(exc.folder)
        raise
    except distributed.GroupBroken as exc:
        # The group cannot go on; rank 0 has written the case in flight as a row (`jobs.suite`),
        # and the launcher resumes, or under a torchrun started by hand the user does. No
        # cleanup: a communicator stuck in a collective could hang it.
        print(f"ampbench: rank {world.rank}: {exc}", file=sys.stderr, flush=True)
        if world.leader and world.run_dir is not None and not launch.launched():
            print(f"ampbench: {launch.resume_hint(world.run_dir, world.size)}", file=sys.stderr)
        sys.stdout.flush()
        os._exit(3)
    if world.leader:
        from bench.publish import render  # pandas: none at parse time

        if code != 2 and run_dir.is_dir():
            render.after_job(run_dir)
        print(run_dir)
    if code == 1 and world.distributed and launch.launched():
        code = 0  # the launcher exits 1 for it: torchrun would add a traceback to a rank's 1
    if world.distributed:
        distributed.leave(code)
    return code


def _session(args: argparse.Namespace, world: object) -> tuple:
    from bench.jobs import session  # pandas, torch: none at parse time

    if args.resume is not None:
        allowed = ("resume", "force", "world_size", "oversubscribe", "collective_timeout", "debug")
        argv.refuse_with_resume(args, allowed)
        return session.resume(args.resume, force=args.force, world=world)
    return session.start(
        ranks.run_config(args, world.device, world.size),
        results_dir=argv.results_dir(args),
        command=argv.command_line(args.argv, args.parser),
        tag=args.tag,
        world=world,
    )
