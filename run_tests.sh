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
exec "$PY" -m pytest "$@"
