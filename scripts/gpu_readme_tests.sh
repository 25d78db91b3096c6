#!/usr/bin/env bash
# The README's test command on a GPU machine, as a new user runs it from a fresh copy, then the
# GPU lane (scripts/gpu_tests.sh); each one's log and wall time go to OUT_DIR (the device
# command's $OUT). The GPU is named first, so a log says what it ran on.
# Usage: scripts/gpu_readme_tests.sh OUT_DIR
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: scripts/gpu_readme_tests.sh OUT_DIR}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1
for part in tests gpu_lane; do
    log="$out/$part.log"
    { nvidia-smi -L; echo "commit $(python3 -c 'from bench.measure import env; print(env.code())' 2>/dev/null)"; nproc; } | tee "$log"
    case "$part" in
        tests) cmd=(./run_tests.sh -p no:cacheprovider --durations=10) ;;
        gpu_lane) cmd=(scripts/gpu_tests.sh -p no:cacheprovider --durations=10) ;;
    esac
    echo "== ${cmd[*]}" | tee -a "$log"
    start=$(date +%s%N)
    "${cmd[@]}" >>"$log" 2>&1
    rc=$?
    end=$(date +%s%N)
    tail -n 25 "$log"
    ms=$(((end - start) / 1000000))
    printf '== exit %s after %d.%03d s\n' "$rc" $((ms / 1000)) $((ms % 1000)) | tee -a "$log"
done
