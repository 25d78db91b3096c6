#!/usr/bin/env bash
# The GPU lane: the CUDA-only tests (pytest's `cuda` mark), which CI's CPU machine skips, run on
# this machine's GPUs, after a line naming them; pytest's summary (`-ra`) then names every test
# that skipped and why (a second GPU, torchao, an fp8-capable GPU). One process: these tests time
# and measure memory on the GPU, which workers sharing it would disturb. Without a GPU it stops
# with one line instead of skipping everything. Arguments go to pytest (`-x`, `-k fp8`).
# When to run it: docs/development.md#the-gpu-lane.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/python_env.sh
ampbench_python "torch, pandas, tabulate, scipy, matplotlib, pytest, pytest_benchmark"

"$PY" - <<'PYTHON'
import sys

import torch

if not torch.cuda.is_available():
    print(
        f"ampbench: error: torch {torch.__version__} sees no CUDA GPU here: the GPU lane would "
        "skip every test; run it on a GPU machine",
        file=sys.stderr,
    )
    sys.exit(2)
gpus = ", ".join(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count()))
print(f"ampbench: GPU lane on {gpus} (torch {torch.__version__}, CUDA {torch.version.cuda})")
PYTHON
exec ./run_tests.sh -m cuda -p no:xdist "$@"
