#!/usr/bin/env bash
# ampbench's test suite: lint (when ruff is there), then the CPU tests with tiny sizes.
# CUDA-only tests skip themselves without a GPU. Arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")"
source scripts/python_env.sh
ampbench_python "torch, pandas, tabulate, scipy, matplotlib, pytest, pytest_benchmark"

if "$PY" -m ruff --version >/dev/null 2>&1; then
    "$PY" -m ruff check .
    "$PY" -m ruff format --check .
else
    echo "ampbench: ruff is not installed for $PY; skipping lint" >&2
fi

# Whether the arguments (or PYTEST_ADDOPTS) say how to spread the tests, or ask for something
# that needs them in this process: --pdb and --trace (which pytest-xdist refuses), -s (whose
# output a worker would not show).
chooses_workers() {
    local arg
    for arg in "$@"; do
        case "$arg" in
            -n | -n?* | --numprocesses | --numprocesses=* | --maxprocesses* | --dist | --dist=* \
                | -d | --tx | --tx=* | *no:xdist | --pdb | --trace | -s | --capture=no)
                return 0
                ;;
        esac
    done
    return 1
}

# On 2 cores or more pytest-xdist, when installed, spreads the tests over them: a worker a core,
# at most 16 (more start more torch processes than they save). `--dist loadgroup`: the tests that
# share a module's fixture (a torchrun run, a study) go to one worker, which builds it once
# (tests/conftest.py groups them); every other test goes to whichever worker is free. Each worker
# runs torch's CPU ops on its share of the cores (tests/conftest.py). On 2 cores (CI) two workers
# are faster than one process: many tests wait on processes they start (torchrun's ranks, a
# `./run_bench.sh`, a clone's `ab`), and the other worker runs meanwhile (docs/development.md).
spread=()
# shellcheck disable=SC2086  # PYTEST_ADDOPTS is split into words, as pytest splits it
if ! chooses_workers "$@" ${PYTEST_ADDOPTS:-} && "$PY" -c 'import xdist' 2>/dev/null; then
    cores=$("$PY" -c 'import os; print(len(os.sched_getaffinity(0)))')
    if ((cores >= 2)); then
        spread=(-n "$((cores < 16 ? cores : 16))" --dist loadgroup)
    fi
fi
exec "$PY" -m pytest ${spread[@]+"${spread[@]}"} "$@"
