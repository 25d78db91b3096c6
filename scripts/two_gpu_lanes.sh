#!/usr/bin/env bash
# Run project commands on a two-GPU box in two lanes at once, one GPU each, within one device
# command's time: lane A on GPU 0, lane B on GPU 1. Each lane is a list of commands separated by
# ';;', run in order, each stopped at the shared deadline (LIMIT seconds, default 540). A run
# folder stopped that way is finished by a later session with `./run_bench.sh --resume FOLDER`.
# New folders go to results_new/ (pass `--results-dir results_new`); at the end it and the folders
# named in PACK are packed into OUT_DIR/results.tgz, with each lane's log beside it.
# Usage: scripts/two_gpu_lanes.sh OUT_DIR 'LANE A COMMANDS' 'LANE B COMMANDS'
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: scripts/two_gpu_lanes.sh OUT_DIR LANE_A LANE_B}"
mkdir -p results_new "$out"
export PYTHONUNBUFFERED=1
deadline=$(( $(date +%s) + ${LIMIT:-540} ))

lane() {  # lane NAME COMMANDS
    local name="$1" cmd
    local IFS=$'\n'
    for cmd in $(echo "$2" | sed 's/;;/\n/g'); do
        left=$(( deadline - $(date +%s) ))
        if [ "$left" -lt 30 ]; then
            echo "== lane $name: no time left for: $cmd"
            continue
        fi
        echo "== lane $name ($(date -u +%H:%M:%S), ${left}s left): $cmd"
        timeout "$left" bash -c "$cmd"
        echo "== lane $name exit $?: $cmd"
    done
}

nvidia-smi --query-gpu=index,name,driver_version,memory.used,clocks.sm,clocks.mem \
    --format=csv >"$out/gpus.txt" 2>&1
CUDA_VISIBLE_DEVICES=0 lane A "${2:-}" >"$out/lane_a.log" 2>&1 &
a=$!
CUDA_VISIBLE_DEVICES=1 lane B "${3:-}" >"$out/lane_b.log" 2>&1 &
b=$!
wait "$a" "$b"
tar czf "$out/results.tgz" results_new ${PACK:-}
grep -h "^== lane" "$out/lane_a.log" "$out/lane_b.log"
