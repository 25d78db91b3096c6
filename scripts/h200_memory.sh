#!/usr/bin/env bash
# The evidence that comparing two commits sees peak memory (docs/comparing.md, "Memory"): a
# commit that raises peak allocated memory by a few percent at the same speed must be called
# `more memory` by `ampbench ab` and `compare` and fail the pytest-benchmark memory gate, and
# the unchanged commit must pass all three.
#
# The device gets a copy of the working tree without its history, so this makes a scratch git
# repository of that copy (branch `base`, one commit) and on top of it branch `keep30`: from the
# start of each backward to the end of the optimizer step, the training step keeps one more
# tensor alive, an uninitialised buffer of 30% of the parameters' bytes (torch.empty: the caching
# allocator hands out a block, no kernel runs, so the step's time does not change). Then, with
# the project's own commands:
#   1. `ampbench ab base keep30` (ROUNDS rounds a side) and `ampbench ab base base` (AA_ROUNDS),
#      each writing a comparison folder under OUT/ab, with --fail-on-more-memory (exit 1 = a case
#      uses more memory); then `ampbench compare` of each folder's A/ and B/ with the same gate;
#   2. the pytest-benchmark suite (the steps of fp32 and bf16-amp): a save of base, then a save of
#      base and one of keep30, each under the memory gate against the first
#      (--ampbench-memory-compare=0001 --ampbench-memory-fail=1%);
#   3. scripts/memory_aa_spread.py over everything made (OUT/aa-spread).
# exits.csv has one row per command with its exit status and what it should be. Everything is
# written under OUT and packed into OUT/kept.tgz after each step (a device returns shallow files).
# Expected on one H200: about 3 minutes (8 fresh processes of `run`, 3 pytest saves of 2 steps).
# Usage: [ROUNDS=2] [AA_ROUNDS=2] [GRID="run options"] [SUITE="pytest options"]
#        scripts/h200_memory.sh OUT
#   A CPU check of everything but the peaks (the CPU records none: every memory verdict is `–`):
#   GRID="--device cpu --preset tiny --batch-sizes 8 --modes fp32 --optimizers foreach
#   --variants eager --no-overhead --repeats 1 --steps 3 --warmup 1" SUITE="--ampbench-preset tiny"
set -uo pipefail
out="${1:?usage: scripts/h200_memory.sh OUT}"
mkdir -p "$out" && out="$(cd "$out" && pwd)"
here="$(cd "$(dirname "$0")/.." && pwd)"
rounds="${ROUNDS:-2}"
aa_rounds="${AA_ROUNDS:-2}"
read -ra grid <<<"${GRID:---preset seed --batch-sizes 1024 --optimizers fused --modes fp32,bf16-amp --variants eager --no-overhead --repeats 1}"
read -ra suite <<<"${SUITE:-}"
export PYTHONUNBUFFERED=1
log="$out/memory.log"
PY="${PYTHON:-python3}"

repo="$(mktemp -d)/ampbench"
mkdir -p "$repo"
tar -C "$here" --exclude=./.git --exclude=./.venv --exclude=./runs --exclude=./.gpu \
    --exclude=./.whl -cf - . | tar -C "$repo" -xf -
cd "$repo" || exit 1
git init -q -b base . && git add -A
ident=(-c user.name=ampbench -c user.email=ampbench@localhost)
git "${ident[@]}" commit -qm "base: the working tree of ${AMPBENCH_GIT_COMMIT:-an unknown commit}"
git checkout -q -b keep30
"$PY" - <<'EOF' || exit 1
from pathlib import Path

path = Path("bench/plan/step.py")
text = path.read_text()
backward = """    with s.mode.context(s.case.device):
        s.scaler.scale(loss).backward()
"""
step = """    optimizer_update(s)
    s.optimizer.zero_grad(set_to_none=True)
"""
assert text.count(backward) == 1 and text.count(step) == 1, "step.py changed: update keep30"
text = text.replace(backward, """    # keep30: one more tensor alive from here to the end of the optimizer step, 30% of the
    # parameters' bytes; torch.empty runs no kernel, so the time stays the same.
    s.__dict__.pop("_keep30", None)
    size = sum(p.numel() * p.element_size() for p in s.model.parameters())
    s.__dict__["_keep30"] = torch.empty(int(0.3 * size), dtype=torch.uint8, device=s.x.device)
""" + backward)
text = text.replace(step, step + """    s.__dict__.pop("_keep30", None)
""")
path.write_text(text)
EOF
git "${ident[@]}" commit -qam "keep30: one more tensor (30% of the parameters' bytes) alive across the backward"
git checkout -q base
git log --format='%h %s' base keep30 | tee "$out/commits.txt"
git diff base keep30 > "$out/keep30.diff"
unset AMPBENCH_GIT_COMMIT AMPBENCH_GIT_DIRTY AMPBENCH_GIT_OVERRIDE  # each run names the scratch commit it ran

keep() {
    (cd "$out" && find . \( -path './storage/*.json' -o -path './ab/*/report.md' \
        -o -path './ab/*/verdicts.csv' -o -path './ab/*/env.json' -o -path './ab/*/[AB]/*/rows.jsonl' \
        -o -path './ab/*/[AB]/*/env.json' -o -name '*.log' -o -name '*.csv' -o -name '*.md' \
        -o -name '*.txt' -o -name '*.diff' \) -not -name kept.tgz -print0 |
        tar --null -czf kept.tgz.part -T - && mv kept.tgz.part kept.tgz)
}
echo "step,exit,expected,seconds" > "$out/exits.csv"
record() {  # record STEP EXPECTED COMMAND...: run it, log it, one row of exits.csv
    local name=$1 expected=$2 t0=$SECONDS code
    shift 2
    echo "== $name: $*" | tee -a "$log"
    "$@" >>"$log" 2>&1
    code=$?
    echo "$name,$code,$expected,$((SECONDS - t0))" | tee -a "$out/exits.csv"
    keep
}

# 1. ab and compare: keep30 must be `more memory` (exit 1), base against itself `same memory`.
for pair in "keep30 $rounds 1" "base $aa_rounds 0"; do
    read -r rev n expected <<<"$pair"
    record "ab base $rev" "$expected" "$PY" -m bench ab base "$rev" "${grid[@]}" --rounds "$n" \
        --fail-on-more-memory --results-dir "$out/ab" --tag "$rev"
    folder=$(find "$out/ab" -maxdepth 1 -name "*_ab_$rev" | sort | tail -n 1)
    [ -n "$folder" ] && record "compare base $rev" "$expected" "$PY" -m bench compare \
        "$folder/A" "$folder/B" --fail-on-more-memory --no-write
done

# 2. The pytest-benchmark memory gate against a save of base.
export AMPBENCH_BENCH_STORAGE="$out/storage"
phases=(--ampbench-phases step --ampbench-modes fp32,bf16-amp --ampbench-rounds 5 "${suite[@]}")
gate=(--ampbench-memory-compare=0001 --ampbench-memory-fail=1%)
record "pytest save base" 0 ./run_bench.sh pytest "${phases[@]}" -p no:cacheprovider
record "pytest gate base" 0 ./run_bench.sh pytest "${phases[@]}" "${gate[@]}" -p no:cacheprovider
git checkout -q keep30
record "pytest gate keep30" 1 ./run_bench.sh pytest "${phases[@]}" "${gate[@]}" -p no:cacheprovider
git checkout -q base

# 3. The A/A spread of everything made here (the runs of base in both comparisons, the saves).
record "aa spread" 0 "$PY" scripts/memory_aa_spread.py "$out" "$out/aa-spread"
for f in "$out"/ab/*/report.md; do
    echo "== $f" >>"$log"
    grep -E "memory|^\| " "$f" >>"$log"
done
keep
echo "== done in ${SECONDS}s; exits.csv:" | tee -a "$log"
cat "$out/exits.csv"
