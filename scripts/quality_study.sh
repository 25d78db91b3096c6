#!/usr/bin/env bash
# The time-to-quality studies on one H200, with the project's own commands (docs/quality.md).
#   OUT_DIR   where the log and the packed study folders go (the device command's $OUT)
#   BUDGET_S  the seconds of training this command may spend (`quality --budget-s`)
#   then either `start ARGS...` (a new study in OUT_DIR/results, ARGS its options) or
#   `resume STUDY_DIR [ARGS...]` (train what a committed study left, in place).
# Each study folder is packed into OUT_DIR/<name>.tgz after its command ends, however it ended.
# Usage: scripts/quality_study.sh OUT_DIR BUDGET_S start|resume [STUDY_DIR] [ARGS...]
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: see the header}"
budget="${2:?usage: see the header}"
part="${3:?usage: see the header}"
shift 3
export PYTHONUNBUFFERED=1
mkdir -p "$out/results"
log="$out/quality.log"
{ nvidia-smi -L; echo "commit $(python3 -c 'from bench.measure import env; print(env.code())' 2>/dev/null || echo unknown)"; } | tee -a "$log"
# LIMIT (seconds, default 560): the command's own limit, under the device's; runs still training
# then are lost, finished ones are kept.
stop=(timeout --signal=INT --kill-after=20 "${LIMIT:-560}")
case "$part" in
    start)
        echo "== ./run_bench.sh quality --budget-s $budget --results-dir OUT/results $*" | tee -a "$log"
        "${stop[@]}" ./run_bench.sh quality --budget-s "$budget" --results-dir "$out/results" "$@" \
            2>&1 | tee -a "$log"
        dirs=("$out"/results/*/)
        ;;
    resume)
        study="${1:?resume needs the study folder}"
        shift
        echo "== ./run_bench.sh quality --resume $study --budget-s $budget $*" | tee -a "$log"
        "${stop[@]}" ./run_bench.sh quality --resume "$study" --budget-s "$budget" "$@" \
            2>&1 | tee -a "$log"
        ./run_bench.sh report "$study" 2>&1 | tee -a "$log"
        dirs=("$study")
        ;;
    *) echo "quality_study.sh: unknown part $part (start, resume)" >&2; exit 2 ;;
esac
echo "== exit ${PIPESTATUS[0]}" | tee -a "$log"
for d in "${dirs[@]}"; do
    [ -d "$d" ] || continue
    name=$(basename "$d")
    ./run_bench.sh report "$d" >/dev/null 2>&1
    tar -czf "$out/$name.tgz" -C "$(dirname "$d")" --exclude='.lock' "$name"
done
ls -la "$out" | tee -a "$log"
