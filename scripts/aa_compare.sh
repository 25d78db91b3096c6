#!/usr/bin/env bash
# `./run_bench.sh ab HEAD HEAD [run options]` is the A/A comparison that holds across runs
# (alternating fresh processes); this script compares two single runs, which compare judges from
# their windows: give it `--repeats 5` or more, as 3 windows a side are too few for a verdict
# (docs/comparing.md).
# Run-to-run noise and `bench compare`, with the project's own commands:
#   1. two timing runs of this commit with one grid, one after the other, into OUT_DIR;
#   2. A/A: `./run_bench.sh compare RUN1 RUN2`, the same code twice: every verdict should be
#      `same` or `unclear`;
#   3. a copy of RUN2 with every sample scaled by SHIFT (default 1.05), named
#      `<RUN2>_shifted-1.05`, and `compare RUN1 SHIFTED`: a known 5% slowdown, to be `slower`;
#   4. copies of both runs without their windows (`<RUN>_no-repeats`), compared: what the
#      per-step test, which older folders get, makes of the same A/A pair;
# then prints the verdict counts of 2 to 4 (the compare tables are written beside the runs).
# The grid: every mode, batch 256 and 1024, fused Adam, eager, the default repeats (3), no
# harness-overhead check: meant to take about 2 minutes for both runs on an H200 (not yet timed
# there). Arguments after OUT_DIR go to both runs and override those (a CPU check:
# `--device cpu --preset tiny`).
# Usage: [SHIFT=1.05] scripts/aa_compare.sh OUT_DIR [run options]
set -euo pipefail
out="${1:?usage: scripts/aa_compare.sh OUT_DIR [run options]}"
shift
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cd "$(dirname "$0")/.."
source scripts/python_env.sh
ampbench_python "torch, pandas, tabulate, scipy, matplotlib"
factor="${SHIFT:-1.05}"
grid=(--batch-sizes 256,1024 --optimizers fused --variants eager --no-overhead)

new_run() {  # one timing run; prints the folder it made
    local before after
    before=$(ls -1 "$out")
    ./run_bench.sh --results-dir "$out" "${grid[@]}" "$@" >&2 || return 1
    after=$(ls -1 "$out")
    comm -13 <(echo "$before") <(echo "$after") | head -n 1 | sed "s|^|$out/|"
}

checked_run() {  # new_run, ending the script when the run failed or made no folder
    local run
    run=$(new_run "$@") || { echo "aa_compare: the run failed" >&2; exit 1; }
    [ -f "$run/env.json" ] || { echo "aa_compare: the run made no folder" >&2; exit 1; }
    echo "$run"
}

copy_run() {  # copy_run SRC DST FACTOR|none: SRC's samples scaled by FACTOR, or without windows
    "$PY" - "$@" <<'EOF'
import sys
from pathlib import Path

from bench.store import results

src, dst, how = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
k = 1.0 if how == "none" else float(how)
dst.mkdir()
env = results.read_env(src)
env["copied_from"] = {"run": src.name, "samples_scaled_by": k, "windows_kept": how != "none"}
results.write_env(dst, env)
for rec in results.read_rows(src / results.SAMPLES):
    rec["samples_ms"] = {p: [ms * k for ms in v] for p, v in rec["samples_ms"].items()}
    windows = rec.pop("repeats_ms", None)
    if windows and how != "none":
        rec["repeats_ms"] = {p: [[ms * k for ms in w] for w in ws] for p, ws in windows.items()}
    results.append_jsonl(dst / results.SAMPLES, rec)
# compare reads the rows for the cases and their statuses; the phase times are scaled too, so
# that the copy's rows agree with its samples (its throughput columns are left as measured).
phases = ("fwd", "bwd", "step", "total")
for row in results.read_rows(src / results.ROWS):
    for key in [f"{p}_ms{s}" for p in phases for s in ("", "_iqr", "_p10", "_p90")]:
        if isinstance(row.get(key), (int, float)):
            row[key] *= k
    results.append_jsonl(dst / results.ROWS, row)
EOF
}

counts() {  # counts LABEL A B: compare A with B and print its verdict counts
    local text
    text=$(./run_bench.sh compare "$2" "$3")
    printf '%-34s %s\n' "$1:" "$(grep -E '^[0-9]+ (same|unclear|faster|slower|missing)' <<<"$text")"
}

run1=$(checked_run "$@")
run2=$(checked_run "$@")
shifted="${run2}_shifted-${factor}"
copy_run "$run2" "$shifted" "$factor"
copy_run "$run1" "${run1}_no-repeats" none
copy_run "$run2" "${run2}_no-repeats" none

echo
echo "run 1: $run1"
echo "run 2: $run2"
counts "A/A (run 1 against run 2)" "$run1" "$run2"
counts "shifted (run 2 × $factor)" "$run1" "$shifted"
counts "A/A, per-step test (no windows)" "${run1}_no-repeats" "${run2}_no-repeats"
