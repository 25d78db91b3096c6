"""A torchrun worker for the distributed tests: ampbench's command line, with faults injected.

`AMPBENCH_TEST_FAULTS` lists `KIND|CASE_ID|RANK` items separated by `;`: on that rank, building
that case raises (`error`) or never returns (`hang`), as a rank that runs out of memory or
stalls would. With `AMPBENCH_TEST_FINALIZED` naming a folder, a rank that goes through Python's
finalization leaves a file there (`distributed.leave` ends a rank without it).
Run as `torchrun ... tests/dist_worker.py run --gpus 2 ...`.

`torchrun ... tests/dist_worker.py each-model M1,M2 PARENT run ...` runs that command once a
model, with `--model M --results-dir PARENT/<i>` (and rank 0's exit status in
`PARENT/<i>/exit_status`), in one world: the ranks start (and import torch and the zoos) once
for the lot. Between runs the group stays up, since gloo cannot join a second default group
through torchrun's store.
"""

from __future__ import annotations

import atexit
import os
import sys
import time
from pathlib import Path
from typing import NoReturn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # torchrun runs a file

from bench import cli
from bench.execution import distributed
from bench.measure import runner


def main() -> int:
    rank = int(os.environ["RANK"])
    faults = [f.split("|") for f in os.environ.get("AMPBENCH_TEST_FAULTS", "").split(";") if f]
    real_build = runner.build

    def build(plan, **kwargs):
        for kind, case_id, on_rank in faults:
            if plan.case.case_id == case_id and rank == int(on_rank):
                if kind == "error":
                    raise RuntimeError(f"injected fault on rank {rank}")
                time.sleep(3600)  # a stalled rank: torchrun ends it when the others give up
        return real_build(plan, **kwargs)

    runner.build = build
    finalized = os.environ.get("AMPBENCH_TEST_FINALIZED")
    if finalized:
        atexit.register((Path(finalized) / f"rank{rank}").touch)
    if sys.argv[1:2] == ["each-model"]:
        return _each_model(*sys.argv[2:4], sys.argv[4:])
    return cli.main(sys.argv[1:])


class _Left(BaseException):
    """A run's rank would have ended the process here (`distributed.leave`); not an Exception,
    which the command line would report as its own error."""

    def __init__(self, code: int) -> None:
        self.code = code


def _each_model(models: str, parent: str, argv: list[str]) -> NoReturn:
    """The runs of `argv` for each model of the comma list, one after another. Each run leaves
    the world as `World.close` does, but for the group's end. Every rank ends with status 0: a
    rank's other status makes torchrun stop the rest, rank 0 perhaps mid-report."""
    leave, destroy = distributed.leave, distributed.dist.destroy_process_group

    def left(code: int):
        raise _Left(code)

    distributed.leave = left
    distributed.dist.destroy_process_group = lambda *args, **kwargs: None
    for i, model in enumerate(models.split(",")):
        folder = Path(parent) / str(i)
        try:
            code = cli.main([*argv, "--model", model, "--results-dir", str(folder)])
        except _Left as exc:
            code = exc.code
        if int(os.environ["RANK"]) == 0:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "exit_status").write_text(str(code))
    destroy()
    leave(0)


if __name__ == "__main__":
    sys.exit(main())
