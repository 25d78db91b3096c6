"""A torchrun worker for the distributed tests: ampbench's command line, with faults injected.

`AMPBENCH_TEST_FAULTS` lists `KIND|CASE_ID|RANK` items separated by `;`: on that rank, building
that case raises (`error`) or never returns (`hang`), as a rank that runs out of memory or
stalls would. With `AMPBENCH_TEST_FINALIZED` naming a folder, a rank that goes through Python's
finalization leaves a file there (`distributed.leave` ends a rank without it).
Run as `torchrun ... tests/dist_worker.py run --gpus 2 ...`.
"""

from __future__ import annotations

import atexit
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # torchrun runs a file

from bench import cli
from bench.measure import runner


def main() -> int:
    rank = int(os.environ["RANK"])
    faults = [f.split("|") for f in os.environ.get("AMPBENCH_TEST_FAULTS", "").split(";") if f]
    real_build = runner.build

    def build(case, **kwargs):
        for kind, case_id, on_rank in faults:
            if case.case_id == case_id and rank == int(on_rank):
                if kind == "error":
                    raise RuntimeError(f"injected fault on rank {rank}")
                time.sleep(3600)  # a stalled rank: torchrun ends it when the others give up
        return real_build(case, **kwargs)

    runner.build = build
    finalized = os.environ.get("AMPBENCH_TEST_FINALIZED")
    if finalized:
        atexit.register((Path(finalized) / f"rank{rank}").touch)
    return cli.main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
