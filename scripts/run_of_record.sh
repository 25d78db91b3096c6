#!/usr/bin/env bash
# The run of record on ONE H200, with the project's own commands:
#   0. torchao from a carried wheel (.whl/torchao-*.whl; no network there), as in fp8_timing.sh;
#   1. `./run_bench.sh` with its defaults (every mode, batch 256/1024/4096, both Adams,
#      eager/compile/cudagraph, the harness-against-a-plain-loop check) and RUN_ARGS (say
#      `--repeats 3`: 3 windows of the default 15 steps for every case, none stopped early; the
#      runs of record before the adaptive rule had 3 windows of 30 steps) into results_new/;
#      stopped with SIGINT at LIMIT seconds (default 420), so that a later call can finish it
#      with `./run_bench.sh --resume results_new/<folder>` (RESUME=that folder);
#   2. the pytest-benchmark suite at this commit, and (when .old/ holds an older commit's tree,
#      OLD_COMMIT its sha) the same suite at that commit, both saved under their commits in
#      results_new/pytest-benchmark, and `pytest-benchmark compare` of the two.
# Usage: [LIMIT=s] [RESUME=dir] [RUN_ARGS=...] [SKIP_PYTEST=1] [OLD_COMMIT=sha]
#        scripts/run_of_record.sh OUT_DIR
#        (log in OUT_DIR/record.log; OUT_DIR/record.tgz packs results_new/)
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: scripts/run_of_record.sh OUT_DIR}"
mkdir -p "$out" results_new
export PYTHONUNBUFFERED=1
log() { echo "== $* ($(date -u +%H:%M:%S))" | tee -a "$out/record.log"; }
pack() { tar czf "$out/record.tgz" results_new; }
trap pack EXIT

log "0. torchao"
if ! python3 -c 'import torchao' 2>/dev/null && ls .whl/torchao-*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/torchao-*.whl >>"$out/record.log" 2>&1
    export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
fi
python3 -c 'import torch, torchao; print("torch", torch.__version__, "torchao", torchao.__version__)' \
    2>&1 | tee -a "$out/record.log"
nvidia-smi --query-gpu=name,memory.used,memory.total,clocks.sm,clocks.mem --format=csv \
    | tee -a "$out/record.log"

log "1. the default run"
if [ -n "${RESUME:-}" ]; then
    args=(--resume "$RESUME")
else
    args=(--results-dir results_new)
    read -r -a extra <<<"${RUN_ARGS:-}"  # a resumed run keeps the settings it was made with
    args+=("${extra[@]}")
fi
log "./run_bench.sh ${args[*]}"
timeout -s INT "${LIMIT:-420}" ./run_bench.sh "${args[@]}" >>"$out/record.log" 2>&1
log "run exit $?"

if [ -n "${SKIP_PYTEST:-}" ]; then
    exit 0
fi
log "2. pytest-benchmark at this commit"
export AMPBENCH_BENCH_STORAGE="$PWD/results_new/pytest-benchmark"
./run_bench.sh pytest >>"$out/record.log" 2>&1
log "pytest exit $?"
if [ -d .old ] && [ -n "${OLD_COMMIT:-}" ]; then
    log "2b. pytest-benchmark at ${OLD_COMMIT:0:7}"
    (cd .old && AMPBENCH_GIT_COMMIT="$OLD_COMMIT" AMPBENCH_GIT_DIRTY=0 AMPBENCH_GIT_OVERRIDE=1 \
        ./run_bench.sh pytest --benchmark-save="${OLD_COMMIT:0:7}") >>"$out/record.log" 2>&1
    log "old pytest exit $?"
    new=$(python3 -c 'from bench.measure.env import benchmark_save_name; print(benchmark_save_name())')
    python3 -m pytest_benchmark --storage "file://$AMPBENCH_BENCH_STORAGE" compare \
        "*${OLD_COMMIT:0:7}*" "*${new}*" --columns=median,iqr,rounds --sort=name --group-by=name \
        >"results_new/pytest-benchmark/compare_${OLD_COMMIT:0:7}_${new}.txt" 2>&1
    log "compare exit $?"
fi
