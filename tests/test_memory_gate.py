"""The pytest-benchmark suite's memory gate (tests/benchmarks/memory_gate.py), in pytest
sessions of their own over a two-benchmark file whose peaks the test sets: a saved run, then
the same peaks (passes), a rise (fails, exit 1), a fall (passes), no peaks (passes, says so),
and bad options (one line, exit 4)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from bench.verdicts import memory
from tests.benchmarks import memory_gate

ROOT = Path(__file__).resolve().parent.parent

CONFTEST = """
from tests.benchmarks import memory_gate


def pytest_addoption(parser):
    memory_gate.add_options(parser.getgroup("ampbench"))


def pytest_configure(config):
    memory_gate.configure(config)
"""
BENCHMARKS = """
import os

import pytest


@pytest.mark.parametrize("name", ["fp32", "bf16"])
def test_step(benchmark, name):
    peak = os.environ.get("PEAK_" + name.upper())
    benchmark.extra_info["peak_alloc_gib"] = float(peak) if peak else None
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
"""


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of two benchmarks, and a storage holding one saved run (0001) at 4 and 2 GiB."""
    folder = tmp_path_factory.mktemp("gate")
    (folder / "conftest.py").write_text(CONFTEST)
    (folder / "test_fake.py").write_text(BENCHMARKS)
    done = _session(folder, {"PEAK_FP32": "4", "PEAK_BF16": "2"}, "--benchmark-save=base")
    assert done.returncode == 0, done.stdout + done.stderr
    return folder


def _session(folder: Path, peaks: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PEAK_"))}
    env |= {**peaks, "PYTHONPATH": str(ROOT)}
    storage = f"--benchmark-storage=file://{folder / 'storage'}"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", storage, *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_gate_fails_a_rise_and_passes_the_same_peaks_or_a_fall(suite):
    gate = ["--ampbench-memory-compare=0001", "--ampbench-memory-fail=1%"]
    same = _session(suite, {"PEAK_FP32": "4", "PEAK_BF16": "2"}, *gate)
    assert same.returncode == 0, same.stdout + same.stderr
    assert "2 same memory" in same.stdout and "0001_base.json" in same.stdout
    rise = _session(suite, {"PEAK_FP32": "4.2", "PEAK_BF16": "2"}, *gate)
    assert rise.returncode == 1, rise.stdout + rise.stderr
    assert "1 more memory (+5%), 1 same memory" in rise.stdout
    assert "test_step[fp32]: more memory, 4 -> 4.2 GiB (+204.8 MiB, +5%)" in rise.stdout
    assert "peak memory has risen" in rise.stdout and "Traceback" not in rise.stdout
    # A fall, and no peaks (the CPU records none): in `judge`, below; the same code decides.


class _Storage:
    """What the gate reads of pytest-benchmark's storage: `load(glob)`, here finding nothing."""

    def load(self, *globs: str) -> list:
        return []

    def __str__(self) -> str:
        return "file://saves"


def test_a_saved_run_that_is_not_there_is_one_line_before_any_test():
    session = SimpleNamespace(config=SimpleNamespace(_benchmarksession=SimpleNamespace(
        storage=_Storage())))  # fmt: skip
    gate = memory_gate.MemoryGate("0099", memory.DEFAULT)
    with pytest.raises(pytest.UsageError) as err:  # pytest ends the session there, status 4
        gate.pytest_sessionstart(session)  # type: ignore[arg-type]
    assert str(err.value) == (
        "--ampbench-memory-compare=0099: no saved run matches it in file://saves"
    )


class _Config:
    """What `memory_gate.configure` reads of a `pytest.Config`."""

    def __init__(self, **given: str) -> None:
        self.given = {f"--ampbench-memory-{k}": v for k, v in given.items()}

    def getoption(self, name: str) -> str | None:
        return self.given.get(name)


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"compare": "0001", "fail": "5GB"}, "--ampbench-memory-fail: memory tolerance '5GB'"),
        ({"fail": "1%"}, "--ampbench-memory-fail needs --ampbench-memory-compare"),
    ],
)
def test_bad_gate_options_are_one_line(given, said):
    with pytest.raises(pytest.UsageError, match=said) as err:
        memory_gate.configure(_Config(**given))  # type: ignore[arg-type]
    assert "\n" not in str(err.value)


def test_the_gate_judges_each_benchmark_with_the_comparisons_rule():
    saved = {"a": {"peak_alloc_gib": 1.0}, "b": {"peak_alloc_gib": 1.0}, "old": {}}
    now = {"a": {"peak_alloc_gib": 1.05}, "b": {"peak_alloc_gib": 1.0}, "new": {}}
    failed, lines = memory_gate.judge(saved, now, memory.DEFAULT)
    assert failed and lines[0].endswith("1 more memory (+5%), 1 same memory")
    failed, _ = memory_gate.judge(saved, now, memory.Tolerance(mib=0, pct=6))
    assert not failed
    fell, lines = memory_gate.judge(saved, {"a": {"peak_alloc_gib": 0.75}}, memory.DEFAULT)
    assert not fell and lines[1] == "  a: less memory, 1 -> 0.75 GiB (-256 MiB, -25%)"
    cpu = {"a": {"peak_alloc_gib": None}, "b": {}}
    fell, lines = memory_gate.judge(saved, cpu, memory.DEFAULT)
    assert not fell and lines[0].endswith("2 memory not measured")
    assert lines[1].startswith("  2 benchmark(s) not judged: B did not measure peak memory")
