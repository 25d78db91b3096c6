#!/usr/bin/env bash
# The default run's wall time on ONE H200 (issue 55, item 1), with the project's own commands:
#   0. torchao from a carried wheel (.whl/torchao-*.whl; no network there), as h200_record.sh;
#   1. `./run_bench.sh` with its defaults (162 cases; adaptive windows: 2 to 3 of 15 steps),
#      its wall time logged from the command's start to its end (`date` before and after, and
#      bash's SECONDS); stopped with SIGINT at LIMIT seconds (default 335, so that the whole
#      script stays under 6 minutes; `./run_bench.sh --resume FOLDER` finishes a stopped run);
#   2. `./run_bench.sh compare` of the run of record (RECORD, the newest default run) against
#      the new run, and scripts/verdicts_two_runs.py: step-time ratios and the fastest
#      verdict of each batch size, Adam and variant, in both.
# Usage: [LIMIT=s] [RECORD=dir] scripts/h200_default_time.sh   (writes under $OUT:
#        default_time.log, compare.md, verdicts.txt, run.tgz with the new run folder)
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:?set OUT to the folder to write into}"
record="${RECORD:-results/20261203T130741Z_NVIDIA-H200_e5180fb}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1
logf="$out/default_time.log"
log() { echo "== $* ($(date -u +%H:%M:%S))" | tee -a "$logf"; }

log "0. torchao"
if ! python3 -c 'import torchao' 2>/dev/null && ls .whl/torchao-*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/torchao-*.whl >>"$logf" 2>&1
    export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
fi
python3 -c 'import torch, torchao; print("torch", torch.__version__, "torchao", torchao.__version__)' \
    2>&1 | tee -a "$logf"
nvidia-smi --query-gpu=name,memory.used,memory.total,clocks.sm,clocks.mem --format=csv \
    | tee -a "$logf"

log "1. the default run: ./run_bench.sh"
before=$(date -u +%s)
SECONDS=0
echo "command start $(date -u +%Y-%m-%dT%H:%M:%SZ)" | tee -a "$logf"
timeout -s INT "${LIMIT:-335}" ./run_bench.sh >"$out/run_stdout.txt" 2>>"$logf"
status=$?
wall=$SECONDS
after=$(date -u +%s)
echo "command end $(date -u +%Y-%m-%dT%H:%M:%SZ)" | tee -a "$logf"
echo "exit $status; wall time $wall s by SECONDS, $((after - before)) s by date" | tee -a "$logf"
run=$(tail -n 1 "$out/run_stdout.txt")
if [ ! -f "$run/env.json" ]; then
    run=$(ls -td runs/*/ 2>/dev/null | head -n 1)
    run="${run%/}"
fi
echo "run folder: $run" | tee -a "$logf"

log "2. compare against $record"
./run_bench.sh compare "$record" "$run" >"$out/compare.md" 2>>"$logf"
log "compare exit $?"
PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" \
    "${PYTHON:-python3}" scripts/verdicts_two_runs.py "$record" "$run" \
    >"$out/verdicts.txt" 2>>"$logf"
log "verdicts exit $?"
tar czf "$out/run.tgz" "$run"
log "done"
