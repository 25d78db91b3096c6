#!/usr/bin/env bash
# One H200 session's evidence at one commit, one part after another, so that nothing else uses the
# GPU while a part runs; started detached (setsid) and read across device calls:
#   1. the run of record: scripts/run_of_record.sh with RUN_ARGS="--repeats 3" (3 windows of
#      15 steps for every case, none stopped early), without its pytest-benchmark part;
#   2. the default run beside it: scripts/h200_default_time.sh with RECORD = that run;
#   3. the probe's cost: scripts/h200_probe_cost.sh (PARTS as the caller sets them);
#   4. the README's test command and the GPU lane: scripts/gpu_readme_tests.sh.
# Each part writes under OUT_DIR/<n>-<name>/ and, once done, packs it into OUT_DIR/<n>-<name>.tgz;
# OUT_DIR/chain.log has each part's start, exit status and wall time, and "chain done" at the end.
# Usage: scripts/h200_same_commit.sh OUT_DIR   (run from a copy of the repository)
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: scripts/h200_same_commit.sh OUT_DIR}"
mkdir -p "$out" && out="$(cd "$out" && pwd)"
chain="$out/chain.log"
part() {
    local name="$1"
    shift
    echo "== $name: $* (start $(date -u +%H:%M:%S))" >>"$chain"
    SECONDS=0
    "$@"
    echo "== $name: exit $? after $SECONDS s" >>"$chain"
    tar -czf "$out/$name.tgz" -C "$out" "$name"
}
mkdir -p "$out/1-record" "$out/2-default" "$out/3-probe" "$out/4-tests"
LIMIT=700 RUN_ARGS="--repeats 3" SKIP_PYTEST=1 part 1-record scripts/run_of_record.sh "$out/1-record"
record=$(ls -td results_new/*_NVIDIA-* 2>/dev/null | head -n 1)  # the newest: this one
echo "record: ${record:-none}" >>"$chain"
if [ -z "$record" ]; then
    echo "chain stopped: no run of record to compare with" >>"$chain"
    exit 1
fi
cp -r "$record" "$out/1-record/" && tar -czf "$out/1-record.tgz" -C "$out" 1-record
RECORD="$record" OUT="$out/2-default" part 2-default scripts/h200_default_time.sh
part 3-probe scripts/h200_probe_cost.sh "$out/3-probe"
part 4-tests scripts/gpu_readme_tests.sh "$out/4-tests"
echo "chain done $(date -u +%H:%M:%S)" >>"$chain"
