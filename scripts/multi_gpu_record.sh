#!/usr/bin/env bash
# The multi-GPU run of record on a box of GPUS GPUs (default 2: nvidia-h200-x2; GPUS=4 on
# nvidia-h200-x4 for the 4-GPU run), within one device command (< 10 min):
#   0. what the box is: GPUs, their topology, torch and NCCL versions;
#   1. a smoke run on the tiny preset (a few seconds of measuring): if the distributed path is
#      broken, its log says how, cheaply, and step 2 still runs;
#   2. the done run: all five original modes x parallel none (the one-GPU baselines, measured in
#      the same run), ddp, ddp-bf16, fsdp, fsdp-bf16 x batch 1024 and 4096 per GPU, fused Adam,
#      eager, through `./run_bench.sh --gpus $GPUS`, into results_new/ (50 cases, about 3 minutes
#      on 2 GPUs).
# Every collective is bounded (--collective-timeout): a case that fails or hangs on a rank is a
# row, and the launcher goes on. A run cut by the outer `timeout` is finished later with
# `./run_bench.sh --resume results_new/<folder> --gpus N`.
# Usage: [GPUS=N] scripts/multi_gpu_record.sh OUT_DIR    (logs in OUT_DIR, results_new/ packed into it)
set -uo pipefail
out="${1:?usage: scripts/multi_gpu_record.sh OUT_DIR}"
mkdir -p "$out" && out="$(cd "$out" && pwd)"  # absolute: the script runs from the project root
cd "$(dirname "$0")/.."
gpus="${GPUS:-2}"
mkdir -p results_new
export PYTHONUNBUFFERED=1
# NCCL says why a communicator failed, without flooding the log; a hung collective ends its
# process after the timeout (PyTorch's default handling, made explicit).
export NCCL_DEBUG=WARN
export TORCH_NCCL_ASYNC_ERROR_HANDLING=3
# One host, no network: gloo (the control group) and NCCL's bootstrap over the loopback device.
export GLOO_SOCKET_IFNAME="${GLOO_SOCKET_IFNAME:-lo}"
export NCCL_SOCKET_IFNAME="${NCCL_SOCKET_IFNAME:-lo}"
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$out/session.log"; }

log "0. the box"
{
    nvidia-smi --query-gpu=index,name,driver_version,memory.used,clocks.sm,clocks.mem --format=csv
    nvidia-smi topo -m
    python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
        "gpus", torch.cuda.device_count(), "nccl", torch.cuda.nccl.version())'
} >"$out/box.txt" 2>&1
cat "$out/box.txt" | tee -a "$out/session.log"

log "1. smoke: tiny preset, $gpus ranks"
timeout 150 ./run_bench.sh --gpus "$gpus" --preset tiny --modes fp32,bf16-amp,fp16-amp \
    --optimizers fused --variants eager --batch-sizes 64 --steps 5 --warmup 2 \
    --collective-timeout 30 --results-dir "$out/smoke" >"$out/smoke.log" 2>&1
log "smoke exit $?"
grep -E "^\[|^    (ok|error|oom|timeout|unsupported|nonfinite)" "$out/smoke.log" | tee -a "$out/session.log"

log "2. the done run: 5 modes x 5 parallel x batch 1024,4096 per GPU, $gpus ranks"
timeout 400 ./run_bench.sh --gpus "$gpus" \
    --modes fp32,tf32,fp16-amp,fp16-amp-noscale,bf16-amp \
    --parallel none,ddp,ddp-bf16,fsdp,fsdp-bf16 \
    --optimizers fused --variants eager --batch-sizes 1024,4096 \
    --steps 20 --warmup 3 --collective-timeout 60 \
    --results-dir results_new >"$out/run.log" 2>&1
log "done run exit $?"
grep -E "^\[|^    (ok|error|oom|timeout|unsupported|nonfinite)|relaunch|going on" "$out/run.log" \
    | tee -a "$out/session.log"
tar czf "$out/results.tgz" results_new "$out/smoke" 2>/dev/null
log "packed $out/results.tgz"
