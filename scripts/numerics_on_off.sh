#!/usr/bin/env bash
# Does numerics collection touch the timings? Three core runs at the same commit, one after
# another on the same GPU: without the short numerics study, with it (`run --numerics`, which runs
# it in the timing process before the timed cases), and without it again; then `bench compare` of
# the first against the second (on/off) and against the third (off/off, the run-to-run noise).
# `compare` calls a case `same` when its ratio's confidence interval lies within ±2%.
# Usage: scripts/numerics_on_off.sh OUT_DIR   (results in OUT_DIR/results, log in OUT_DIR)
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: scripts/numerics_on_off.sh OUT_DIR}"
res="$out/results"
mkdir -p "$res"
export PYTHONUNBUFFERED=1
log() { echo "== $*" | tee -a "$out/onoff.log"; }
grid=(--batch-sizes 1024,4096 --optimizers fused --no-overhead --results-dir "$res")

run() {  # run TAG [extra flags]: prints the run folder
    local tag="$1"
    shift
    log "run $tag: ./run_bench.sh ${grid[*]} $*" >&2
    ./run_bench.sh "${grid[@]}" "$@" 2>>"$out/onoff.log" | tail -n 1
}
off1=$(run off-1)
on=$(run on --numerics)
off2=$(run off-2)
log "folders: off-1 $off1, on $on, off-2 $off2"
log "compare off-1 (A) with on (B)"
./run_bench.sh compare "$off1" "$on" >>"$out/onoff.log" 2>&1
log "compare off-1 (A) with off-2 (B)"
./run_bench.sh compare "$off1" "$off2" >>"$out/onoff.log" 2>&1
log "done"
