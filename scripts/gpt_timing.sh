#!/usr/bin/env bash
# The gpt workload on one H200 (docs/own-model.md), with the project's own command: every mode ×
# eager and compile, fused Adam, 2 timed windows of 20 steps per case, at
#   124m: gpt2-124m, batch 8 and 16 sequences;
#   1.3b: gpt-1.3b, batch 8 sequences.
# Usage: scripts/gpt_timing.sh OUT_DIR 124m|1.3b [more run options]
#        scripts/gpt_timing.sh OUT_DIR resume RUN_DIR   (finish a run a time limit stopped)
set -euo pipefail
out="${1:?usage: scripts/gpt_timing.sh OUT_DIR 124m|1.3b|resume [...]}"
part="${2:?usage: scripts/gpt_timing.sh OUT_DIR 124m|1.3b|resume [...]}"
shift 2
cd "$(dirname "$0")/.."
common=(--model gpt --optimizers fused --variants eager,compile --steps 20 --repeats 2
    --no-overhead --results-dir "$out")
case "$part" in
    124m) exec ./run_bench.sh "${common[@]}" --preset gpt2-124m --batch-sizes 8,16 "$@" ;;
    1.3b) exec ./run_bench.sh "${common[@]}" --preset gpt-1.3b --batch-sizes 8 "$@" ;;
    resume) exec ./run_bench.sh --resume "${1:?RUN_DIR}" ;;
    *) echo "gpt_timing.sh: unknown part $part (124m, 1.3b, resume)" >&2; exit 2 ;;
esac
