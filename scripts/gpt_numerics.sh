#!/usr/bin/env bash
# The numerics study of the transformer (gpt at gpt2-124m) on one H200, with the project's own
# command: the dtype audit of every mode, the underflow census at batch 2 and 8 sequences (steps
# 0, 200 and 1000 of an fp16 + GradScaler trajectory), and convergence on the workload's Markov
# task at batch 1 and 2 sequences, seeds 0 and 1, 1000 steps (3000 for fp16 with and without a
# scaler), traced every 20 steps.
# Usage: [LIMIT=seconds] scripts/gpt_numerics.sh OUT_DIR MODES
#        RESUME=<study folder> [ADD=modes] [LIMIT=seconds] scripts/gpt_numerics.sh OUT_DIR
#   LIMIT stops the study after that many seconds (a device command's limit); the jobs it
#   finished stay in the folder and RESUME goes on from there; ADD adds modes to a study.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: scripts/gpt_numerics.sh OUT_DIR MODES}"
mkdir -p "$out/results"
export PYTHONUNBUFFERED=1
limit=(timeout --signal=INT --kill-after=20 "${LIMIT:-0}")  # LIMIT 0: none
if [ -n "${RESUME:-}" ]; then
    add=()
    if [ -n "${ADD:-}" ]; then add=(--add-modes "$ADD" --trace-every 20); fi
    "${limit[@]}" ./run_bench.sh numerics --resume "$RESUME" "${add[@]}" 2>&1 | tee -a "$out/numerics.log"
    echo "numerics exit ${PIPESTATUS[0]}" | tee -a "$out/numerics.log"
    exit 0
fi
modes="${2:?usage: scripts/gpt_numerics.sh OUT_DIR MODES}"
"${limit[@]}" ./run_bench.sh numerics --model gpt --preset gpt2-124m --modes "$modes" \
    --conv-batch-sizes 1,2 --seeds 0,1 --steps 1000 --eval-every 100 --long-steps 0 \
    --extended-modes fp16-amp,fp16-amp-noscale --extended-steps 3000 \
    --census-batch-sizes 2,8 --histogram-batch 8 --checkpoints 0,200,1000 --trace-every 20 \
    --heldout 32 --results-dir "$out/results" 2>&1 | tee -a "$out/numerics.log"
echo "numerics exit ${PIPESTATUS[0]}" | tee -a "$out/numerics.log"
