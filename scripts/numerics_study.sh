#!/usr/bin/env bash
# The numerics study on a GPU machine, with the project's own commands:
#   1. a learning-rate sweep: fp32, batch 1024, 300 steps, one lr per GPU in parallel
#      (1e-3 is the question's; the others are the usual steps down);
#   2. the full study at the lr whose sweep run ended with the lowest training loss, spread over
#      every GPU.
#   (with RESUME=<study folder>, it only finishes that interrupted study, in place.)
# Usage: [LR=3e-4] [LIMIT=seconds] scripts/numerics_study.sh OUT_DIR
#        RESUME=results/<folder> [LIMIT=seconds] scripts/numerics_study.sh OUT_DIR
#   Results go to OUT_DIR/results, the log to OUT_DIR/numerics.log. With LR set, the sweep is
#   skipped. LIMIT stops the study after that many seconds (a device session's limit per command);
#   the jobs it finished are kept in the folder, and RESUME goes on from there.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: scripts/numerics_study.sh OUT_DIR}"
res="$out/results"
mkdir -p "$res"
export PYTHONUNBUFFERED=1
log() { echo "== $*" | tee -a "$out/numerics.log"; }
limit=(timeout --signal=INT --kill-after=20 "${LIMIT:-0}")  # LIMIT 0: none

if [ -n "${RESUME:-}" ]; then
    log "resuming $RESUME"
    "${limit[@]}" ./run_bench.sh numerics --resume "$RESUME" >>"$out/numerics.log" 2>&1
    echo "numerics exit $?" | tee -a "$out/numerics.log"
    exit 0
fi

ngpu=$(python3 -c 'import torch; print(max(1, torch.cuda.device_count()))')
lrs=(1e-3 3e-4 1e-4 3e-5)

if [ -n "${LR:-}" ]; then
    lr="$LR"
    log "lr given: $lr (no sweep)"
else
log "1. lr sweep on $ngpu GPU(s): ${lrs[*]}"
i=0
for lr in "${lrs[@]}"; do
    CUDA_VISIBLE_DEVICES=$((i % ngpu)) ./run_bench.sh numerics --lr "$lr" --tag "lr-sweep-$lr" \
        --modes fp32 --conv-batch-sizes 1024 --seeds 0 --steps 300 --long-steps 0 \
        --census-batch-sizes 1024 --checkpoints 0 --results-dir "$res/sweep" \
        >>"$out/numerics.log" 2>&1 &
    i=$((i + 1))
    if [ $((i % ngpu)) -eq 0 ]; then wait; fi
done
wait
lr=$(python3 - "$res/sweep" <<'PY'
import json, sys
from pathlib import Path
import pandas as pd
best = min(
    (pd.read_csv(d / "summary.csv")["final_loss"].iloc[0], json.loads((d / "env.json").read_text())["numerics_config"]["lr"])
    for d in Path(sys.argv[1]).iterdir() if (d / "summary.csv").is_file()
)
for d in sorted(Path(sys.argv[1]).iterdir()):
    s = pd.read_csv(d / "summary.csv").iloc[0]
    print(f"sweep {d.name}: final_loss {s['final_loss']:.4g}, heldout_acc {s['heldout_acc']:.4g}", file=sys.stderr)
print(best[1])
PY
2> >(tee -a "$out/numerics.log" >&2))
log "chosen lr: $lr"
fi

log "2. full study at lr=$lr"
"${limit[@]}" ./run_bench.sh numerics --lr "$lr" --results-dir "$res" >>"$out/numerics.log" 2>&1
echo "numerics exit $?" | tee -a "$out/numerics.log"
log "done"
