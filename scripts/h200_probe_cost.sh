#!/usr/bin/env bash
# Where the probe's cost on a real loop goes (docs/own-loop.md, "What the probe costs"): the overhead
# benchmark (examples/own_loop/overhead.py, 30 rounds of 60 steps a side) as an A/A control
# (neither side probed), with the probe's hooks only (no probe.step()), and with the whole probe
# at time_every=10, in that order, ROUNDS times over; every folder and log packed into
# OUT_DIR/probe_cost.tgz (a device returns a few files, not a tree), the summary lines in
# OUT_DIR/probe_cost.log. About 65 s a part on an H200. PARTS replaces the parts: "NAME ARGS"
# items separated by ";".
# Usage: [ROUNDS=1] [PARTS="name --arg ...;..."] scripts/h200_probe_cost.sh OUT_DIR
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: scripts/h200_probe_cost.sh OUT_DIR}"
mkdir -p "$out" && out="$(cd "$out" && pwd)"
source scripts/python_env.sh
ampbench_python "torch, pandas, tabulate, scipy" || exit 2
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
work=$(mktemp -d)
log="$out/probe_cost.log"
{ nvidia-smi -L; echo "commit $(python3 -c 'from bench.measure import env; print(env.code())' 2>/dev/null || echo unknown)"; } | tee -a "$log"
IFS=';' read -r -a parts <<<"${PARTS:-control --control;hooks-only --hooks-only;time-every-10 --time-every 10}"
for round in $(seq 1 "${ROUNDS:-1}"); do
    for part in "${parts[@]}"; do
        [ -n "${part// /}" ] || continue  # an empty item between two ";"
        set -- $part
        name="$1-$round"
        shift
        echo "== overhead.py --rounds 30 --window 60 $* --out OUT/$name" | tee -a "$log"
        timeout 150 "$PY" examples/own_loop/overhead.py --rounds 30 --window 60 "$@" \
            --out "$work/$name" >"$work/$name.log" 2>&1
        echo "== exit $?" | tee -a "$log"
        grep -E "step without|paired|host time|issue a step|garbage" "$work/$name.log" | tee -a "$log"
    done
done
tar -czf "$out/probe_cost.tgz" -C "$work" .
