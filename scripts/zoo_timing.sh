#!/usr/bin/env bash
# The model-zoo run on one H200, with the project's own commands: real models from the three
# zoos at their real sizes, random weights from their configs (docs/own-model.md).
#   smoke     each zoo at its tiny preset on the GPU (bf16-amp and fp8-tensorwise, eager and
#             compile): the code path, before the real sizes spend device time
#   timing    every mode × eager and compile, fused Adam, 10 timed steps, one run per model
#   numerics  a short numerics study per model (the audit of every mode, the census at one
#             batch size at the first and last step, STEPS steps of convergence per mode (200
#             unless the item names fewer: a 1B model's step is too long for 200 in a call),
#             one seed)
# Usage: [LIMIT=seconds] scripts/zoo_timing.sh OUT_DIR smoke|timing|numerics MODEL@PRESET@BATCH[@STEPS] ...
#   LIMIT: stop starting models this many seconds after the script began (a device command's
#   limit); a model it stops is killed with SIGINT, which keeps its rows for `--resume`.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: scripts/zoo_timing.sh OUT_DIR smoke|timing|numerics MODEL@PRESET@BATCH[@STEPS] ...}"
part="${2:?usage: scripts/zoo_timing.sh OUT_DIR smoke|timing|numerics MODEL@PRESET@BATCH[@STEPS] ...}"
shift 2
mkdir -p "$out/results"
export PYTHONUNBUFFERED=1
start=$SECONDS
limit="${LIMIT:-0}"
log="$out/zoo_$part.log"
status=0
for item in "$@"; do
    IFS=@ read -r model preset batch steps <<<"$item"
    steps="${steps:-200}"
    left=$((limit > 0 ? limit - (SECONDS - start) : 0))
    if ((limit > 0 && left < 30)); then
        echo "== $model: not started, ${left}s left of ${limit}s" | tee -a "$log"
        continue
    fi
    stop=(timeout --signal=INT --kill-after=20 "$left")
    echo "== $part $model preset $preset batch $batch (${left}s left)" | tee -a "$log"
    case "$part" in
        smoke)
            "${stop[@]}" ./run_bench.sh --model "$model" --preset "$preset" \
                --batch-sizes "$batch" --modes bf16-amp,fp8-tensorwise --optimizers fused \
                --variants eager,compile --steps 2 --warmup 1 --no-overhead \
                --results-dir "$out/results" 2>&1 | tee -a "$log"
            ;;
        timing)
            "${stop[@]}" ./run_bench.sh --model "$model" --preset "$preset" \
                --batch-sizes "$batch" --optimizers fused --variants eager,compile \
                --steps 10 --warmup 3 --no-overhead --results-dir "$out/results" 2>&1 | tee -a "$log"
            ;;
        numerics)
            # Tagged by model: studies started in the same second would otherwise share a name.
            tag="${model#*:}-$preset"
            "${stop[@]}" ./run_bench.sh numerics --model "$model" --preset "$preset" \
                --tag "${tag//[^A-Za-z0-9.-]/-}" \
                --census-batch-sizes "$batch" --histogram-batch "$batch" --checkpoints "0,$steps" \
                --conv-batch-sizes "$batch" --seeds 0 --steps "$steps" --eval-every $((steps / 4)) \
                --long-steps 0 --heldout $((4 * batch)) --trace-every 0 \
                --results-dir "$out/results" 2>&1 | tee -a "$log"
            ;;
        *) echo "zoo_timing.sh: unknown part $part (smoke, timing, numerics)" >&2; exit 2 ;;
    esac
    code=${PIPESTATUS[0]}
    echo "== $model exit $code" | tee -a "$log"
    [ "$code" -eq 0 ] || status=1
done
exit "$status"
