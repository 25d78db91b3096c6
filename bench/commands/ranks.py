"""Where `run` runs: one process, or ranks through torchrun; and the grid it refuses first."""

from __future__ import annotations

import argparse
import contextlib
import os

from bench.cases import case
from bench.cases.grid import RunConfig
from bench.commands.given import given, given_sizes, settings
from bench.execution import distributed, launch
from bench.faults import UsageError
from bench.jobs import configs
from bench.measure import env
from bench.store import results


def world(args: argparse.Namespace) -> distributed.World | None:
    """This process's place in the run: None when it must launch the ranks through torchrun
    (`--gpus N` outside torchrun), one rank under torchrun, or a one-process world. Before it
    launches ranks it refuses more than the machine holds and a grid of which nothing can run."""
    gpus = args.world_size or 1
    # A resumed run's ranks run on the device the folder was made on: a relaunch after a broken
    # group carries only --resume, and `auto` would pick CUDA for a CPU (gloo) run on a GPU box.
    device = env.device(args.device)
    if getattr(args, "resume", None) is not None:
        # A folder that is not one is named by the resume itself, below.
        with contextlib.suppress(results.CorruptFolder):
            device = results.read_env(args.resume).get("device", device)
    if distributed.under_torchrun():
        size = int(os.environ["WORLD_SIZE"])
        if args.world_size is not None and args.world_size != size:
            raise UsageError(f"--gpus {args.world_size} but torchrun started {size} ranks")
        return distributed.init(device, args.collective_timeout)
    if gpus > 1:
        launch.check_ranks(gpus, device, oversubscribe=args.oversubscribe)
        if args.numerics:
            raise UsageError("--numerics runs in a one-process run; drop it or --gpus")
        if args.resume is None:
            run_config(args, device, gpus)
        return None
    return distributed.World.single(device)


def run_config(args: argparse.Namespace, device: str, world_size: int) -> RunConfig:
    """The grid of a new run, checked: bad values and a grid of which no case can run here are
    refused (exit 2) before any folder exists, or any rank is started."""
    if args.force:
        raise UsageError("--force goes with --resume")
    options = given(args, RunConfig)
    for how in case.swept().values():
        options[how.plural] = getattr(args, how.plural)
    options["world_size"] = world_size
    options["sizes"] = given_sizes(args)
    with settings():
        return configs.run_config(device=device, preset=args.preset, **options)
