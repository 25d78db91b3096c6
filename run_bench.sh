#!/usr/bin/env bash
# ampbench's main job.
#   ./run_bench.sh [run options]        time the grid into a new folder under runs/
#                                       (GPU: the seed preset, all modes, batch 256,1024,4096,
#                                       both Adams, eager/compile/cudagraph; no GPU: a tiny CPU
#                                       smoke run)
#   ./run_bench.sh ab REV_A REV_B [run options]
#                                       time two commits in alternating fresh processes
#                                       (temporary git worktrees) and compare them
#   ./run_bench.sh compare A B [opts]   compare two run folders (or folders of runs, or
#                                       pytest-benchmark saves) case by case
#   ./run_bench.sh pytest [pytest opts] run the pytest-benchmark suite (the MLP, 4 modes; the
#                                       whole grid: --ampbench-models all --ampbench-modes all)
#                                       and save it, rounds and all, under runs/pytest-benchmark
#   ./run_bench.sh promote RUN_DIR      publish a run: copy it into results/ and index it
#   ./run_bench.sh numerics [opts]      the numerics study: dtypes, underflow, convergence
#   ./run_bench.sh quality [opts]       time to quality on real data: modes against fp32 over
#                                       seeds (docs/quality.md)
#   ./run_bench.sh maxbatch [opts]      the largest batch each mode trains
#   ./run_bench.sh sweep [opts] -- python train.py ARGS
#                                       your own training script over modes x seeds, judged
#                                       (docs/own-loop.md; `recipes`, its old name, still runs it)
#   ./run_bench.sh record [--budget 25m] [--status]
#                                       everything published for this commit, part by part,
#                                       resumable (run, ab, quality, sweep, tests; tiny on the
#                                       CPU); --status: where a detached one is (docs/options.md)
#   ./run_bench.sh report RUN_DIR       re-render a folder's report.md (and its figures)
#   ./run_bench.sh headline RUN_DIR     print a run's headline table
#   ./run_bench.sh index                regenerate results/README.md from the run folders
#   ./run_bench.sh history [--gpu NAME] step time of each case across runs, per GPU model
#   ./run_bench.sh export RUN_DIR --format github-action-benchmark [--output FILE]
#                                       a run's timings as JSON for github-action-benchmark
#   ./run_bench.sh readme [--check]     fill (or check) README.md's generated tables
#   ./run_bench.sh publish [--output DIR]  the results as a static site in site/ (docs/site.md)
#   ./run_bench.sh check RUN_DIR --criteria FILE   PASS/FAIL per criterion (docs/criteria.md)
#   ./run_bench.sh --help               list the commands; `COMMAND --help` lists its options
# Everything but `pytest` is `ampbench` (`python -m bench`) with the same arguments. Paths are
# taken relative to the directory you run it from; new folders go under the project's runs/
# (git-ignored) unless --results-dir says otherwise, and `promote` publishes one into results/.
# Environment: PYTHON (interpreter), AMPBENCH_BENCH_STORAGE (where `pytest` mode saves; default
# runs/pytest-benchmark; copy a save into results/pytest-benchmark/ to publish it),
# AMPBENCH_DEBUG=1 (show the known torch and torchao warnings that are left out: bench/quiet.py).
set -euo pipefail
export AMPBENCH_CWD="$PWD"
cd "$(dirname "$0")"
source scripts/python_env.sh

case "${1:-}" in
    pytest)
        shift
        ampbench_python "torch, pandas, tabulate, scipy, matplotlib, pytest, pytest_benchmark"
        # The suite is a pytest session of its own, never a worker of the caller's: started from
        # a pytest-xdist worker (a test, a CI step), the inherited PYTEST_XDIST_WORKER would make
        # pytest-benchmark disable every benchmark and refuse --benchmark-only.
        unset PYTEST_XDIST_WORKER PYTEST_XDIST_WORKER_COUNT PYTEST_XDIST_TESTRUNUID
        storage="${AMPBENCH_BENCH_STORAGE:-runs/pytest-benchmark}"
        # A storage the caller names is relative to where it ran this, as every path is.
        if [[ -n "${AMPBENCH_BENCH_STORAGE:-}" && "$storage" != /* && "$storage" != *://* ]]; then
            storage="$AMPBENCH_CWD/$storage"
        fi
        # Saved under the commit (bench.measure.env), so `pytest-benchmark compare` shows commits.
        name=$("$PY" -c 'from bench.measure.env import benchmark_save_name; print(benchmark_save_name())')
        # --benchmark-save-data keeps every round, which `ampbench compare` judges.
        exec "$PY" -m pytest tests/benchmarks -m bench_suite --benchmark-only \
            --benchmark-storage="file://$storage" --benchmark-save="$name" --benchmark-save-data \
            --benchmark-sort=name --benchmark-columns=median,iqr,min,max,rounds,iterations "$@"
        ;;
    -h | --help)
        ampbench_python "torch, pandas, tabulate, scipy, matplotlib"
        "$PY" -m bench --help
        echo
        echo "./run_bench.sh with no command (or options only) runs 'run'; 'pytest' runs the"
        echo "pytest-benchmark suite (./run_bench.sh pytest --help)."
        exit 0
        ;;
esac
ampbench_python "torch, pandas, tabulate, scipy, matplotlib"
# Everything else is the `ampbench` command's: with no command (or options only) it runs `run`.
exec "$PY" -m bench "$@"
