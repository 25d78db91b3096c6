#!/usr/bin/env bash
# Issue 10's timing run on ONE H200, with the project's own commands:
#   0. torchao: if it does not import and .whl/torchao-*.whl was carried along, install it into
#      /tmp/site (no network, no dependencies: the image's torch stays) and put it on PYTHONPATH;
#   1. an fp8 smoke: torchao's version, the GPU's compute capability, which Linears each float8
#      mode converts and why, three eager steps of each new mode, one _scaled_mm per scale
#      granularity (each in its own try: a failure is printed, the run goes on);
#   2. the timing run: every mode, old and new, at batch 256, 1024, 4096, 8192, eager and
#      compile, fused Adam, into results_new/. A case that fails is a row with its status; the run
#      is stopped (SIGINT) at LIMIT seconds (default 420) and is then finished with
#      `./run_bench.sh --resume results_new/<folder>`.
# Usage: [LIMIT=seconds] scripts/fp8_timing.sh OUT_DIR   (log in OUT_DIR/fp8.log, the run folder's
#        name on the log's last line and in OUT_DIR/run_dir.txt; OUT_DIR/results.tgz packs it)
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: scripts/fp8_timing.sh OUT_DIR}"
mkdir -p "$out" results_new
export PYTHONUNBUFFERED=1
log() { echo "== $* ($(date -u +%H:%M:%S))" | tee -a "$out/fp8.log"; }

log "0. torchao"
if ! python3 -c 'import torchao' 2>/dev/null; then
    if ls .whl/torchao-*.whl >/dev/null 2>&1; then
        python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
            --target /tmp/site .whl/torchao-*.whl >>"$out/fp8.log" 2>&1
        export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
    else
        log "no torchao and no .whl/torchao-*.whl: the fp8 and bf16-pure-sr rows will be unsupported"
    fi
fi

log "1. fp8 smoke"
timeout 150 python3 - >>"$out/fp8.log" 2>&1 <<'PY'
import traceback

import torch

from bench.modes import fp8
from bench.workloads.registry import make_case
from bench.plan.plan import resolve
from bench.plan.step import build, train_step

print("torch", torch.__version__, "torchao", fp8.torchao_version(), "capability", fp8.capability("cuda"))
for name in ("bf16-pure", "bf16-pure-sr", "fp8-tensorwise", "fp8-rowwise"):
    case = make_case("mlp", "seed", mode=name, optimizer="fused", batch_size=256)
    plan = resolve(case)
    print(f"-- {name}: {fp8.describe(plan.fp8_plan) or 'no float8'}")
    reason = plan.unsupported_reason
    if reason:
        print(f"   unsupported: {reason}")
        continue
    try:
        s = build(plan)
        print("  ", [f"{n}: {type(m).__name__}" for n, m in s.model.named_children()])
        print("   params", {str(p.dtype) for p in s.model.parameters()}, "optimizer", type(s.optimizer).__name__)
        losses = [train_step(s).item() for _ in range(3)]
        print("   3 eager steps, loss", losses)
        del s
    except Exception:
        traceback.print_exc()
    torch.cuda.empty_cache()
gen = torch.Generator(device="cuda").manual_seed(0)
for g in fp8.MODES_STUDIED:
    try:
        a, b, sa, sb = fp8.scaled_mm_operands(4096, g, "cuda", gen)
        out = fp8.scaled_mm(a, b, sa, sb)
        torch.cuda.synchronize()
        print(f"_scaled_mm {g}: ok, out {out.dtype} {tuple(out.shape)}, b stride {b.stride()}, scales {tuple(sa.shape)} {tuple(sb.shape)}")
    except Exception:
        traceback.print_exc()
PY
echo "smoke exit $?" | tee -a "$out/fp8.log"

log "2. timing run: every mode, batch 256-8192, eager and compile, fused Adam"
timeout --signal=INT --kill-after=30 "${LIMIT:-420}" ./run_bench.sh \
    --modes fp32,tf32,fp16-amp,fp16-amp-noscale,bf16-amp,bf16-pure,bf16-pure-sr,fp8-tensorwise,fp8-rowwise \
    --batch-sizes 256,1024,4096,8192 --variants eager,compile --optimizers fused \
    --results-dir results_new >"$out/run_dir.txt" 2>>"$out/fp8.log"
echo "run exit $?" | tee -a "$out/fp8.log"
run_dir=$(ls -td results_new/*/ 2>/dev/null | head -n 1)
log "run folder: $run_dir"
tar czf "$out/results.tgz" results_new
