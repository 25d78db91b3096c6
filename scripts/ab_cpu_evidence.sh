#!/usr/bin/env bash
# How results/ab-cpu/ was made (README.md there): `ampbench ab` on a 2-core CPU shared with other
# work, 5 comparisons of one commit with itself (A/A) and 2 of it against a commit with one extra
# matmul per step (slowdown.patch), one after another, each with ab's defaults (5 rounds a side)
# but slow-2's `--statistic p10`. Runs in a scratch clone, so that no worktree of the project's
# own repository is touched. Usage: scripts/ab_cpu_evidence.sh OUT_DIR [COMMIT]
set -u
out="$(mkdir -p "${1:?usage: ab_cpu_evidence.sh OUT_DIR [COMMIT]}" && cd "$1" && pwd)"
root="$(cd "$(dirname "$0")/.." && pwd)"
here="$root/results/ab-cpu"  # slowdown.patch
scratch="$(mktemp -d)/ampbench"
git clone -q "$root" "$scratch" && cd "$scratch"
git checkout -q --detach "${2:-HEAD}"
git checkout -q -b slow5 && git -c user.name=ab -c user.email=ab@example.com am -q "$here/slowdown.patch"
git checkout -q -
# One thread: two threads on two shared cores stall whenever another process runs (a 0.2 ms step
# of the tiny MLP took up to 330 ms there).
export OMP_NUM_THREADS=1
GRID=(--device cpu --preset tiny --modes fp32 --batch-sizes 4,8,16,32,64 --optimizers foreach,fused
      --no-overhead --steps 200)
run() {  # run TAG REV_A REV_B [ab options]
    local t0=$SECONDS tag=$1 a=$2 b=$3
    shift 3
    python -m bench ab "$a" "$b" "${GRID[@]}" "$@" --results-dir "$out" --tag "$tag" \
        > "$out/$tag.out" 2> "$out/$tag.err"
    echo "$tag exit=$? seconds=$((SECONDS - t0))"
}
run aa-1 HEAD HEAD
run slow-1 HEAD slow5
run aa-2 HEAD HEAD
run aa-3 HEAD HEAD
run aa-4 HEAD HEAD
run aa-5 HEAD HEAD
run slow-2 HEAD slow5 --statistic p10
