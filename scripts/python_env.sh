# Sourced by run_bench.sh and run_tests.sh: sets PY to a Python that can import what ampbench
# needs. The current python3 is used as it is when it already has the packages (an offline GPU box
# needs no network); otherwise a project virtualenv in .venv is created and filled from
# pyproject.toml, with the test tools, torchvision (the resnet50 workload and torchvision:NAME),
# the model zoos (transformers, timm: hf:NAME, timm:NAME) and Lightning (the own-loop callback).
# None of these is among the modules a caller requires: without them their rows are
# `unsupported` and their tests skip. Set PYTHON to use another interpreter.
#
# Whether a Python has the packages is asked of its import system (`importlib.util.find_spec`),
# not by importing them: importing torch, pandas, scipy and matplotlib took about 3 s, paid by
# every ./run_bench.sh and ./run_tests.sh (the test suite starts ./run_bench.sh some 20 times, CI
# 3 times). A package that is there but fails to import fails the command that imports it, with
# its own traceback.

# Whether interpreter $1 finds every module of the comma list $2 (found, not imported).
_has_modules() {
    "$1" -c 'import importlib.util, sys
sys.exit(any(importlib.util.find_spec(m.strip()) is None for m in sys.argv[1].split(",")))' "$2" \
        2>/dev/null
}

ampbench_python() {
    local modules="$1"
    local base="${PYTHON:-python3}"
    if ! command -v "$base" >/dev/null 2>&1; then
        echo "ampbench: error: no Python interpreter '$base' found (set PYTHON)" >&2
        return 2
    fi
    if ! "$base" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
        echo "ampbench: error: $("$base" --version 2>&1) is too old; ampbench needs Python 3.10+" >&2
        return 2
    fi
    if _has_modules "$base" "$modules"; then
        PY="$base"
        return 0
    fi
    if [ ! -x .venv/bin/python ]; then
        echo "ampbench: creating .venv (missing packages for $base)" >&2
        "$base" -m venv .venv || return 1
    fi
    PY=.venv/bin/python
    if ! _has_modules "$PY" "$modules"; then
        echo "ampbench: installing ampbench and its dependencies into .venv" >&2
        "$PY" -m pip install --quiet --disable-pip-version-check --no-compile \
            -e ".[test,vision,zoo,site,lightning]" || return 1
        # pip compiles the packages' bytecode one file at a time (about 60 s of the 120 s on 2
        # cores); compileall spreads it over every core. Compiled once here, since a process
        # under PYTHONDONTWRITEBYTECODE would compile torch again at every import. A file that
        # does not compile (a package's Python 2 example) is skipped, as pip skips it.
        local site
        site=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
        "$PY" -m compileall -q -j 0 "$site" >/dev/null 2>&1 || true
    fi
}
