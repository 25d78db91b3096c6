#!/usr/bin/env bash
# The whole time-to-quality study in one command (docs/quality.md, "The study in one command"):
# `./run_bench.sh quality ARGS` with the device's defaults (on a GPU: the nanoGPT Shakespeare
# preset, its 7 modes × seeds 0-2, 5000 steps at most, a run stopped 8 evaluations past its best,
# runs packed side by side), its wall time logged from the command's start to its end, and the
# study folder packed into OUT_DIR/<name>.tgz however the command ended; OUT_DIR/done marks the end
# (a caller that started this detached polls for it).
# Usage: scripts/quality_one_command.sh OUT_DIR [ARGS...]
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: scripts/quality_one_command.sh OUT_DIR [ARGS...]}"
shift
mkdir -p "$out/results" && out="$(cd "$out" && pwd)"
export PYTHONUNBUFFERED=1
log="$out/quality.log"
{ nvidia-smi -L; echo "commit $(python3 -c 'from bench.measure import env; print(env.code())' 2>/dev/null || echo unknown)"; } | tee -a "$log"
echo "== ./run_bench.sh quality --results-dir OUT/results $*" | tee -a "$log"
echo "started $(date -u +%FT%TZ)" | tee -a "$log"
begin=$(date +%s)
./run_bench.sh quality --results-dir "$out/results" "$@" 2>&1 | sed -u "s#$out#OUT#g" | tee -a "$log"
code=${PIPESTATUS[0]}
end=$(date +%s)
echo "ended $(date -u +%FT%TZ); exit $code; command wall $((end - begin)) s" | tee -a "$log"
for d in "$out"/results/*/; do
    [ -d "$d" ] || continue
    name=$(basename "$d")
    tar -czf "$out/$name.tgz" -C "$out/results" --exclude='.lock' "$name"
done
touch "$out/done"
