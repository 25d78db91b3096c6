#!/usr/bin/env bash
# The evidence that comparing two commits raises no false alarm and catches a slowdown
# (docs/comparing.md), with the project's own commands, on the machine it runs on.
#
# The device gets a copy of the working tree without its history, so this makes a scratch git
# repository of that copy (one commit, branch `base`, whose message names AMPBENCH_GIT_COMMIT) and
# on top of it branch `slow5`, whose every training step waits 5% of its own time more: after the
# forward, the device spins (torch.cuda._sleep) for 5% of the step time it measured on the state
# before, in the first call (a warm-up). It is meant to slow every case of every mode by 5%;
# what it costs is what the comparisons measure (results/ab-h200: less than 5% in places).
# The project's repository, worktrees and runs/ are not touched.
#   pytest  AA+1 saves of the documented gate's suite, `./run_bench.sh pytest --ampbench-phases
#           PHASES` (default step), each timed, every one after the first under the gate against
#           the save before it (--benchmark-compare=PREVIOUS --benchmark-compare-fail=FAIL,
#           default median:3%): AA pairs of one commit; then one save of slow5 under the gate
#           against the last. gate.csv: one row each. PHASES=forward,backward,optimizer,step
#           times the suite's default.
#   ab      `ampbench ab base base` AA times and `ampbench ab base slow5` SLOW times, ab's
#           defaults, on docs/ci/ab.yml's grid: the MLP at its seed size, batch 256 and 1024,
#           fused Adam, fp32, tf32, fp16-amp, bf16-amp and bf16-pure, eager (10 cases), one
#           timed window a case (a round is one process's median step: more windows only
#           lengthen it); each comparison a folder under OUT_DIR/ab.
# Usage: [LIMIT=seconds] [AA=5] [SLOW=2] [FIRST=1] [GRID="run options"] [PHASES=step]
#        [FAIL=median:3%]
#        scripts/compare_evidence.sh OUT_DIR pytest|ab
#   LIMIT: start no new step this many seconds after the script began (a device command's limit).
#   FIRST: the number of ab's first comparison of each kind (aa-FIRST, slow-FIRST), so that
#   comparisons made by several commands into one OUT_DIR keep distinct tags.
#   OUT_DIR/kept.tgz holds the saves and each comparison's report.md, verdicts.csv and env.json,
#   repacked after each step.
#   GRID: the ab grid's run options, and for `pytest` its --ampbench-* options (a CPU check:
#   GRID="--device cpu --preset tiny" for ab, GRID="--ampbench-preset tiny" for pytest).
set -uo pipefail
usage="usage: scripts/compare_evidence.sh OUT_DIR pytest|ab"
out="${1:?$usage}"
part="${2:?$usage}"
mkdir -p "$out" && out="$(cd "$out" && pwd)"
here="$(cd "$(dirname "$0")/.." && pwd)"
start=$SECONDS
limit="${LIMIT:-0}"
aa="${AA:-5}"
slow="${SLOW:-2}"
export PYTHONUNBUFFERED=1
log="$out/compare_$part.log"

# The scratch repository: the copy's files as git would track them (.gitignore applies).
repo="$(mktemp -d)/ampbench"
mkdir -p "$repo"
tar -C "$here" --exclude=./.git --exclude=./.venv --exclude=./runs --exclude=./.gpu \
    --exclude=./.whl -cf - . | tar -C "$repo" -xf -
cd "$repo" || exit 1
git init -q -b base . && git add -A
ident=(-c user.name=ampbench -c user.email=ampbench@localhost)
git "${ident[@]}" commit -qm "base: the working tree of ${AMPBENCH_GIT_COMMIT:-an unknown commit}"
git checkout -q -b slow5
python3 - <<'EOF' || exit 1
from pathlib import Path

path = Path("bench/plan/step.py")
text = path.read_text()
old = """    with s.mode.context(s.case.device, forward=True, cache=s.autocast_cache):
        return s.compute(s.x, s.y)
"""
new = """    with s.mode.context(s.case.device, forward=True, cache=s.autocast_cache):
        out = s.compute(s.x, s.y)
    _slow5(s)
    return out


_CYCLES_PER_S: list[float] = []


def _slow5(s: TrainState) -> None:
    # slow5: every step waits 5% of this state's own step time more, on the device
    # (torch.cuda._sleep spins the GPU; the host does not wait) or on the CPU.
    extra = s.__dict__.get("_slow5")
    if extra is None:
        s.__dict__["_slow5"] = 0.0  # the calibration's own steps run at full speed
        extra = s.__dict__["_slow5"] = 0.05 * _step_seconds(s)
    if extra > 0 and s.case.device == "cuda":
        if not _CYCLES_PER_S:
            _CYCLES_PER_S.append(1e7 / _gpu_seconds(lambda: torch.cuda._sleep(10**7)))
        torch.cuda._sleep(int(extra * _CYCLES_PER_S[0]))
    elif extra > 0:
        time.sleep(extra)


def _gpu_seconds(fn: Callable[[], object], cuda: bool = True) -> float:
    if not cuda:
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 1e3


def _step_seconds(s: TrainState) -> float:
    for _ in range(3):
        train_step(s)
    return _gpu_seconds(lambda: [train_step(s) for _ in range(5)], s.case.device == "cuda") / 5
"""
assert text.count(old) == 1, "bench/plan/step.py's forward has changed: update slow5"
text = text.replace(old, new).replace("import dataclasses\n", "import dataclasses\nimport time\n", 1)
path.write_text(text)
EOF
git "${ident[@]}" commit -qam "slow5: every training step waits 5% of its own time more"
git checkout -q base
git -C "$repo" log --format='%h %s' base slow5 | tee "$out/commits.txt"
git -C "$repo" diff base slow5 > "$out/slow5.diff"
# Each save and round names the scratch commit it ran, not the copied tree's.
unset AMPBENCH_GIT_COMMIT AMPBENCH_GIT_DIRTY AMPBENCH_GIT_OVERRIDE

keep() {  # kept.tgz: what is published of every save and comparison made so far, packed after
    # each, so that a command stopped by its limit still brings them back (a device returns a few
    # shallow files, not the storage's or the comparisons' nested folders)
    (cd "$out" && find . \( -path './storage/*.json' -o -path './ab/*/report.md' \
        -o -path './ab/*/verdicts.csv' -o -path './ab/*/env.json' \) -not -path './ab/*/*/*' \
        -print0 | tar --null -czf kept.tgz.part -T - && mv kept.tgz.part kept.tgz)
}

left() {  # left NAME: 0 when there is time to start it, else logs why not
    if ((limit > 0 && SECONDS - start > limit)); then
        echo "== $1: not started, ${limit}s were used" | tee -a "$log"
        return 1
    fi
}

case "$part" in
    pytest)
        export AMPBENCH_BENCH_STORAGE="$out/storage"
        read -ra grid <<<"${GRID:-}"
        phases=(--ampbench-phases "${PHASES:-step}")
        fail="--benchmark-compare-fail=${FAIL:-median:3%}"
        echo "save,revision,compared_with,gate,exit,seconds" > "$out/gate.csv"
        save() {  # save N REVISION [PREVIOUS]: the suite, gated against save PREVIOUS if given
            local n=$1 rev=$2 prev=${3:-} t0=$SECONDS code gate=()
            [ -n "$prev" ] && gate=("--benchmark-compare=$prev" "$fail")
            git checkout -q "$rev"
            echo "== save $n ($rev) ${phases[*]} ${gate[*]}" | tee -a "$log"
            ./run_bench.sh pytest "${grid[@]}" "${phases[@]}" "${gate[@]}" >>"$log" 2>&1
            code=$?
            echo "$n,$rev,${prev:-none},${gate[1]:-none},$code,$((SECONDS - t0))" | tee -a "$out/gate.csv"
            keep
        }
        save 1 base
        for ((i = 2; i <= aa + 1; i++)); do
            left "save $i" || break
            save "$i" base "$(printf %04d $((i - 1)))"
        done
        if left "the slow5 save"; then
            save "$((aa + 2))" slow5 "$(printf %04d $((aa + 1)))"
        fi
        git checkout -q base
        ;;
    ab)
        read -ra grid <<<"${GRID:---preset seed --batch-sizes 256,1024 --optimizers fused --modes fp32,tf32,fp16-amp,bf16-amp,bf16-pure --variants eager --no-overhead --repeats 1}"
        compare() {  # compare TAG REV_A REV_B
            local t0=$SECONDS
            echo "== ab $2 $3 ($1)" | tee -a "$log"
            python3 -m bench ab "$2" "$3" "${grid[@]}" --results-dir "$out/ab" --tag "$1" \
                >>"$log" 2>&1
            echo "== $1 exit $? seconds $((SECONDS - t0))" | tee -a "$log"
            keep
        }
        # The slowdown between the A/A pairs, so that each kind meets the machine's drift.
        first="${FIRST:-1}"
        for ((k = 0; k < aa || k < slow; k++)); do
            i=$((first + k))
            if ((k < aa)); then left "aa-$i" && compare "aa-$i" base base; fi
            if ((k < slow)); then left "slow-$i" && compare "slow-$i" base slow5; fi
        done
        ;;
    *)
        echo "compare_evidence.sh: unknown part $part (pytest, ab)" >&2
        exit 2
        ;;
esac
