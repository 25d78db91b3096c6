#!/usr/bin/env bash
# `ampbench ab` stopping when it knows (docs/comparing.md, "When ab stops"), on the machine it
# runs on: one comparison of a commit with itself on two quiet cases of the MLP (fp32 and tf32,
# batch 1024, fused Adam, eager, one timed window a process), with ab's rule: from 5 rounds a side
# (`--min-rounds`) it looks after each pair of rounds and stops once every case is decided, at 6 a
# side (`--rounds`) at the latest. Its report says how many rounds each side ran and why it
# stopped. About 10 to 12 processes of 12 to 20 s each on one H200: 2 to 4 minutes.
#
# The device gets a copy of the working tree without its history, so this makes a scratch git
# repository of that copy (one commit, branch `base`); the project's repository is not touched.
# Writes OUT/ab/<comparison folder>/ (A/, B/, logs/, env.json, report.md, verdicts.csv), and, for
# a device that returns only shallow files, OUT/report.md, OUT/env.json, OUT/verdicts.csv and
# OUT/ab.tgz (the whole folder).
# Usage: [GRID="run options"] scripts/ab_stopping.sh [OUT]   (OUT defaults to $OUT)
#   GRID="--device cpu --preset tiny --modes fp32 --batch-sizes 8 --steps 20" checks it on a CPU.
set -uo pipefail
out="${1:-${OUT:?usage: scripts/ab_stopping.sh OUT}}"
mkdir -p "$out" && out="$(cd "$out" && pwd)"
here="$(cd "$(dirname "$0")/.." && pwd)"
py="${PYTHON:-python3}"
export PYTHONUNBUFFERED=1
read -ra grid <<<"${GRID:---preset seed --modes fp32,tf32 --batch-sizes 1024 --optimizers fused --variants eager --no-overhead --repeats 1}"

repo="$(mktemp -d)/ampbench"
mkdir -p "$repo"
tar -C "$here" --exclude=./.git --exclude=./.venv --exclude=./runs --exclude=./results \
    --exclude=./.gpu --exclude=./.whl -cf - . | tar -C "$repo" -xf -
cd "$repo" || exit 1
git init -q -b base . && git add -A
git -c user.name=ampbench -c user.email=ampbench@localhost commit -qm \
    "base: the working tree of ${AMPBENCH_GIT_COMMIT:-an unknown commit}"
unset AMPBENCH_GIT_COMMIT AMPBENCH_GIT_DIRTY AMPBENCH_GIT_OVERRIDE

t0=$SECONDS
"$py" -m bench ab base base "${grid[@]}" --min-rounds 5 --rounds 6 \
    --results-dir "$out/ab" --tag stopping 2>&1 | tee "$out/ab.log"
code=${PIPESTATUS[0]}
echo "== ab exit $code, $((SECONDS - t0)) s" | tee -a "$out/ab.log"
folder="$(find "$out/ab" -mindepth 1 -maxdepth 1 -type d | head -n 1)"
if [ -n "$folder" ]; then
    for f in report.md env.json verdicts.csv; do
        [ -f "$folder/$f" ] && cp "$folder/$f" "$out/$f"
    done
    tar -C "$out/ab" -czf "$out/ab.tgz" "$(basename "$folder")"
fi
exit "$code"
