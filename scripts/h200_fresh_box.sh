#!/usr/bin/env bash
# The README's two commands on a GPU box as it comes: a git-less copy of the tree (as a release
# tarball gives it), the machine's own python3 and nothing installed, each command's wall time
# logged from its start to its end. One command a device call (each is budgeted 300 s):
#   WHAT=tests scripts/h200_fresh_box.sh   # ./run_tests.sh
#   WHAT=bench scripts/h200_fresh_box.sh   # ./run_bench.sh (the default grid), then its folder
# Writes under $OUT: fresh_<WHAT>.log (the command's output and its wall time) and, for bench,
# run.tgz (the new run folder, to commit under results/).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:?set OUT to the folder to write into}"
what="${WHAT:?set WHAT to tests or bench}"
copy=/tmp/ampbench-fresh
rm -rf "$copy" && mkdir -p "$copy"
# Tracked and untracked-not-ignored files, no .git: what a release carries.
tar --exclude=.git --exclude=.venv --exclude=.whl --exclude=runs -cf - . | tar -xf - -C "$copy"
if ls .whl/torchao-*.whl >/dev/null 2>&1 && ! python3 -c 'import torchao' 2>/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/torchao-*.whl
    export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONUNBUFFERED=1
logf="$out/fresh_$what.log"
cd "$copy"
echo "command start $(date -u +%Y-%m-%dT%H:%M:%SZ) in a git-less copy ($(nproc) cores)" | tee "$logf"
SECONDS=0
case "$what" in
    tests) ./run_tests.sh >>"$logf" 2>&1 ;;
    bench) ./run_bench.sh >>"$logf" 2>&1 ;;
    *) echo "WHAT=$what: tests or bench" >&2; exit 2 ;;
esac
status=$?
echo "ended $(date -u +%Y-%m-%dT%H:%M:%SZ); exit $status; command wall $SECONDS s" | tee -a "$logf"
if [ "$what" = bench ]; then
    run=$(ls -td runs/*/ 2>/dev/null | head -n 1)
    [ -n "$run" ] && tar -czf "$out/run.tgz" -C "$(dirname "$run")" "$(basename "$run")"
fi
exit "$status"
