#!/usr/bin/env bash
# The evidence for measuring your own training loop (docs/own-loop.md), on one GPU, with the
# project's own examples and commands; everything under OUT_DIR (the device command's $OUT):
#   probe_run/   the probe on a real loop: examples/own_loop/plain_loop.py (ampbench's GPT at
#                nanoGPT's shakespeare-char size, bf16 autocast, the bundled Shakespeare text),
#                600 steps, memory and the census every 200; its report.md rendered.
#   overhead/    the probe's cost on that loop: examples/own_loop/overhead.py, 30 rounds of 60
#                steps a side (with the probe, census off / without it), interleaved, and the
#                census's own time: overhead.md, overhead.json (and the probed steps' folder).
#   overhead-time-every-10/  the same with the probe timing one step in 10 (`time_every=10`).
#   sweep/       `./run_bench.sh sweep` over fp32, fp16 with GradScaler and bf16 autocast, 3
#                seeds, on examples/own_loop/hf_trainer.py (a small GPT-2 from its config, random
#                weights, the Shakespeare text by characters; transformers' Trainer with the
#                callback): the driver's folder with sweep.md and report.md. Where accelerate
#                (which the Trainer needs) is not installed, on plain_loop.py instead, and the
#                log says so.
#   own_loop.log everything the commands printed.
# Nothing is downloaded. About 3 minutes on an H200 (each part also has its own time limit).
# Usage: scripts/h200_own_loop.sh OUT_DIR
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: scripts/h200_own_loop.sh OUT_DIR}"
mkdir -p "$out" && out="$(cd "$out" && pwd)"
source scripts/python_env.sh
ampbench_python "torch, pandas, tabulate, scipy, matplotlib" || exit 2
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
log="$out/own_loop.log"
{ nvidia-smi -L; echo "commit $(python3 -c 'from bench.measure import env; print(env.code())' 2>/dev/null || echo unknown)"; } | tee -a "$log"
step() { echo "== $*" | tee -a "$log"; "$@" 2>&1 | tee -a "$log"; echo "== exit ${PIPESTATUS[0]}" | tee -a "$log"; }

# (a) the probe on a real loop, then its overhead and the census's cost.
step env AMPBENCH_MODE=bf16-amp timeout 120 "$PY" examples/own_loop/plain_loop.py \
    --steps 600 --every 200 --eval-every 200 --out "$out/probe_run"
step ./run_bench.sh report "$out/probe_run"
step timeout 150 "$PY" examples/own_loop/overhead.py --rounds 30 --window 60 --out "$out/overhead"
step timeout 150 "$PY" examples/own_loop/overhead.py --rounds 30 --window 60 --time-every 10 \
    --out "$out/overhead-time-every-10"

# (b) the driver on a transformers Trainer script: three modes, three seeds.
script=(examples/own_loop/hf_trainer.py --steps 200 --eval-every 50 --eval-batches 10)
if ! "$PY" -c 'import accelerate, transformers' 2>/dev/null; then
    echo "== accelerate or transformers is missing: the driver runs plain_loop.py instead" | tee -a "$log"
    script=(examples/own_loop/plain_loop.py --steps 300 --eval-every 100 --eval-batches 10)
fi
step timeout 300 ./run_bench.sh sweep --modes fp32,fp16-amp,bf16-amp --seeds 0,1,2 \
    --timeout-s 90 --results-dir "$out/sweep" -- "$PY" "${script[@]}"
