#!/usr/bin/env bash
# One GPU session for the execution variants and the largest batch (two GPUs, two lanes at once):
#   lane A, GPU 0: the default GPU grid, `./run_bench.sh` (5 modes x batch 256,1024,4096 x
#                  foreach/fused Adam x eager, compile, cudagraph), then the opt-in variants
#                  compile-graphs and compile-max in a second folder;
#   lane B, GPU 1: the whole test suite (./run_tests.sh), then `./run_bench.sh maxbatch`.
# Each lane stops at LIMIT seconds (default 540); a run folder stopped that way is finished later
# with `./run_bench.sh --resume FOLDER` (RESUME_A, RESUME_B: folders to finish first).
# Usage: scripts/h200_variants.sh OUT_DIR; results are packed into OUT_DIR/results.tgz, logs beside.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: scripts/h200_variants.sh OUT_DIR}"
limit="${LIMIT:-540}"
res=results_new
mkdir -p "$res" "$out"
export PYTHONUNBUFFERED=1
deadline=$(( $(date +%s) + limit ))
left() { echo $(( deadline - $(date +%s) )); }

lane_a() {
    if [ -n "${RESUME_A:-}" ]; then
        timeout "$(left)" ./run_bench.sh --resume "$RESUME_A"
    else
        timeout "$(left)" ./run_bench.sh --results-dir "$res"
    fi
    echo "lane A grid exit $?"
    [ "$(left)" -gt 60 ] && timeout "$(left)" ./run_bench.sh --results-dir "$res" \
        --variants ${EXTRA_VARIANTS:-compile-graphs,compile-max} --no-overhead
    echo "lane A extra variants exit $?"
}

lane_b() {
    if [ -z "${SKIP_TESTS:-}" ]; then
        timeout "$(left)" ./run_tests.sh -q -p no:cacheprovider 2>&1 | tail -n 40
        echo "lane B tests exit ${PIPESTATUS[0]}"
    fi
    timeout "$(left)" ./run_bench.sh maxbatch --results-dir "$res" ${MAXBATCH_ARGS:-}
    echo "lane B maxbatch exit $?"
}

nvidia-smi --query-gpu=index,name,memory.used,clocks.sm,clocks.mem --format=csv >"$out/gpus.txt"
CUDA_VISIBLE_DEVICES=0 lane_a >"$out/lane_a.log" 2>&1 &
a=$!
CUDA_VISIBLE_DEVICES=1 lane_b >"$out/lane_b.log" 2>&1 &
b=$!
wait "$a" "$b"
tar czf "$out/results.tgz" "$res" $RESUME_A 2>/dev/null
tail -n 5 "$out/lane_a.log" "$out/lane_b.log"
