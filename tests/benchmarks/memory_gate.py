"""The pytest-benchmark suite's memory gate: `--ampbench-memory-compare=NNNN` compares this
session's peaks (each benchmark's `extra_info["peak_alloc_gib"]`) with those of a saved run, and
`--ampbench-memory-fail=1%` (or `16MiB`, or `16MiB,1%`) fails the session (exit status 1) when a
benchmark's peak rose by more than that.

pytest-benchmark records no memory (its `--benchmark-compare-fail` gates timings only), so this
is the gate's second step (docs/comparing.md has the CI mode): each benchmark is judged with
`bench.verdicts.memory.judge`, the rule `ampbench compare` and `ab` use, with one round a side;
without `--ampbench-memory-fail` the tolerance is `bench.verdicts.memory.DEFAULT`. The saved run
is found as `--benchmark-compare` finds it, in `--benchmark-storage`: one that matches nothing
ends the session before any test (pytest's usage error, status 4), as does a bad tolerance.
Benchmarks without a peak (the CPU records none) are listed as not measured and fail nothing.

tests/conftest.py registers the options (`add_options`), tests/benchmarks/conftest.py the gate
(`configure`). No torch here: the gate reads JSON and numbers.
"""

from __future__ import annotations

from typing import Any

import pytest

from bench.verdicts import memory

COMPARE = "--ampbench-memory-compare"
FAIL = "--ampbench-memory-fail"


def add_options(group: Any) -> None:
    group.addoption(
        COMPARE,
        metavar="NUM|ID",
        help="compare each benchmark's peak allocated memory (extra_info) with this saved run's, "
        "found as --benchmark-compare finds it (docs/comparing.md)",
    )
    group.addoption(
        FAIL,
        metavar="TOL",
        help="with --ampbench-memory-compare: fail the session when a benchmark's peak rose by "
        f"more than TOL: N%%, NMiB or both (default {memory.DEFAULT.spec().replace('%', '%%')})",
    )


def configure(config: pytest.Config) -> None:
    """Register the gate when --ampbench-memory-compare is given; a bad value is one line."""
    saved = config.getoption(COMPARE)
    given = config.getoption(FAIL)
    if saved is None:
        if given is not None:
            raise pytest.UsageError(f"{FAIL} needs {COMPARE}=NUM: a saved run to compare with")
        return
    try:
        tolerance = memory.Tolerance.parse(given) if given is not None else memory.DEFAULT
    except ValueError as exc:
        raise pytest.UsageError(f"{FAIL}: {exc}") from exc
    config.pluginmanager.register(MemoryGate(saved, tolerance), "ampbench-memory-gate")


def judge(
    saved: dict[str, dict], now: dict[str, dict], tolerance: memory.Tolerance
) -> tuple[bool, list[str]]:
    """Each benchmark of this session (`now`: name -> extra_info) found in the saved run
    (`saved`: the same): whether any uses more memory, and the lines that say so."""
    verdicts = {
        name: memory.judge([saved[name]], [info], tolerance)
        for name, info in now.items()
        if name in saved
    }
    lines = [
        f"memory gate, peak allocated memory against the saved run ({tolerance.text()}): "
        + (memory.summary(list(verdicts.values())) or "no benchmark in common")
    ]
    for name, v in verdicts.items():
        if v["memory_verdict"] in ("more memory", "less memory"):
            lines.append(
                f"  {name}: {v['memory_verdict']}, {v['peak_alloc_gib_a']:.4g} -> "
                f"{v['peak_alloc_gib_b']:.4g} GiB ({v['memory_change_mib']:+.4g} MiB, "
                f"{v['memory_change_pct']:+.3g}%)"
            )
    unmeasured = [n for n, v in verdicts.items() if v["memory_verdict"] == "not measured"]
    if unmeasured:
        note = next(iter(verdicts[n]["memory_note"] for n in unmeasured))
        lines.append(f"  {len(unmeasured)} benchmark(s) not judged: {note}")
    failed = any(v["memory_verdict"] == "more memory" for v in verdicts.values())
    return failed, lines


class MemoryGate:
    """The gate as a pytest plugin: the saved run is loaded at the session's start, this
    session's peaks judged at its end."""

    def __init__(self, saved: str, tolerance: memory.Tolerance) -> None:
        self.saved_name = saved
        self.tolerance = tolerance
        self.saved: dict[str, dict] = {}
        self.source = ""
        self.lines: list[str] = []

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        bench_session = getattr(session.config, "_benchmarksession", None)
        if bench_session is None:
            raise pytest.UsageError(f"{COMPARE} needs pytest-benchmark")
        found = list(bench_session.storage.load(self.saved_name))[-1:]
        if not found:
            raise pytest.UsageError(
                f"{COMPARE}={self.saved_name}: no saved run matches it in {bench_session.storage}"
            )
        path, data = found[0]
        self.source = str(path)
        self.saved = {b["name"]: b.get("extra_info") or {} for b in data["benchmarks"]}

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        bench_session = getattr(session.config, "_benchmarksession", None)
        now = {b.name: dict(b.extra_info) for b in getattr(bench_session, "benchmarks", [])}
        failed, self.lines = judge(self.saved, now, self.tolerance)
        self.lines[0] += f" [{self.source}]"
        if failed:
            self.lines.append(f"{FAIL}: peak memory has risen (listed above)")
            if session.exitstatus == 0:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.lines:
            terminalreporter.section("ampbench memory gate")
            for line in self.lines:
                terminalreporter.write_line(line)
