"""`ampbench run`: the grid timed here, in a rank, or through torchrun (`execution.launch`)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from bench.commands import ranks
from bench.commands.given import refuse_with_resume
from bench.execution import distributed, launch
from bench.faults import Interrupted
from bench.jobs import session
from bench.publish import render

WITH_RESUME = ("resume", "force", "world_size", "oversubscribe", "collective_timeout", "debug")
"""The options a resume takes; its settings come from the folder."""


def run(args: argparse.Namespace) -> int:
    world = ranks.world(args)
    if world is None:  # this process only launches the ranks
        keep = ["--collective-timeout", str(args.collective_timeout)]
        return launch.launch(args.world_size, args.argv, keep=keep)
    try:
        run_dir, code = _session(args, world)
    except Interrupted as exc:  # Ctrl-C or SIGTERM: the report of the cases kept, then the line
        if world.leader and exc.folder is not None and exc.folder.is_dir():
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
        if code != 2 and run_dir.is_dir():
            render.after_job(run_dir)
        print(run_dir)
    if code == 1 and world.distributed and launch.launched():
        code = 0  # the launcher exits 1 for it: torchrun would add a traceback to a rank's 1
    if world.distributed:
        distributed.leave(code)
    return code


def _session(args: argparse.Namespace, world: distributed.World) -> tuple[Path, int]:
    if args.resume is not None:
        refuse_with_resume(args, WITH_RESUME)
        return session.resume(args.resume, force=args.force, world=world)
    return session.start(
        ranks.run_config(args, world.device, world.size),
        results_dir=args.results_dir,
        command=args.command_line,
        tag=args.tag,
        world=world,
    )
