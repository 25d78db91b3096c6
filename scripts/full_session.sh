#!/usr/bin/env bash
# Everything one GPU session publishes, in one go, with the project's own commands:
#   1. the full core run (./run_bench.sh, defaults);
#   2. a second, smaller run at the same commit, for `bench compare` across runs;
#   3. `bench compare` across the two runs, and across the optimizer axis within run 1;
#   4. the pytest-benchmark suite saved twice (foreach, then fused Adam, the second with the
#      --benchmark-compare gate), and `pytest-benchmark compare` of the two saves.
# Usage: scripts/full_session.sh OUT_DIR   (results land in OUT_DIR/results, logs in OUT_DIR)
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: scripts/full_session.sh OUT_DIR}"
res="$out/results"
mkdir -p "$res"
export PYTHONUNBUFFERED=1
log() { echo "== $*" | tee -a "$out/session.log"; }

log "1. core run"
run1=$(./run_bench.sh --results-dir "$res" 2> >(tee -a "$out/session.log" >&2) | tail -n 1)
log "run 1: $run1"

log "2. second run at the same commit"
run2=$(./run_bench.sh --results-dir "$res" --batch-sizes 4096 \
    2> >(tee -a "$out/session.log" >&2) | tail -n 1)
log "run 2: $run2"

log "3. bench compare"
./run_bench.sh compare "$run1" "$run2" >>"$out/session.log" 2>&1
echo "compare across runs exit $?" | tee -a "$out/session.log"
./run_bench.sh compare "$run1" "$run1" --pair optimizer=foreach:fused >>"$out/session.log" 2>&1
echo "compare foreach vs fused exit $?" | tee -a "$out/session.log"

log "4. pytest-benchmark suite"
export AMPBENCH_BENCH_STORAGE="$res/pytest-benchmark"
./run_bench.sh pytest --ampbench-optimizer foreach >>"$out/session.log" 2>&1
echo "pytest foreach exit $?" | tee -a "$out/session.log"
./run_bench.sh pytest --ampbench-optimizer fused \
    --benchmark-compare=0001 --benchmark-compare-fail=median:5% >>"$out/session.log" 2>&1
echo "pytest fused with --benchmark-compare-fail=median:5% exit $?" | tee -a "$out/session.log"
python3 -m pytest_benchmark --storage "file://$AMPBENCH_BENCH_STORAGE" compare 0001 0002 \
    --columns=median,iqr,rounds --sort=name >"$res/pytest-benchmark/compare_0001_0002.txt" 2>&1
echo "pytest-benchmark compare exit $?" | tee -a "$out/session.log"
log "done"
