"""The pytest-benchmark suite's grid and its one shared train state.

Tests here carry the `bench_suite` marker. `./run_tests.sh` runs them in a short CPU form;
`./run_bench.sh pytest` runs them on the GPU with --benchmark-only and saves the result, its raw
rounds included (`--benchmark-save-data`, which `ampbench compare` reads).

The default grid is a CI gate's: it must finish within 90 s on one H200. Every built-in workload
and mode (108 benchmarks on CUDA) did not finish in 200 s there, and the MLP's 9 modes (36
benchmarks, 10 rounds) took 46 s, about 4 s a mode of which the fp32 step is the most. So the
default is the MLP and the four modes of the question (fp32, TF32, fp16 autocast with its scaler,
bf16 autocast): 16 benchmarks, with 20 rounds (the statistics of a save's rounds want more than
10): 34 to 40 s a save on one H200 (results/ab-h200/). A CI gate times the step alone
(`--ampbench-phases step`): the 1.35 ms forward passes under autocast move by up to 15% from one
process to the next, the steps by a few percent (docs/comparing.md).
`--ampbench-models all --ampbench-modes all` is the whole grid.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from bench.cases.case import Case
from bench.measure.timing import clock_for, settle
from bench.modes.mode import MODES
from bench.plan.plan import resolve
from bench.plan.step import TrainState, build, train_step, watch
from tests.benchmarks import memory_gate
from tests.conftest import PHASES, suite_options

CUDA = torch.cuda.is_available()


DEFAULT_BATCH = {
    "mlp": 1024 if CUDA else 8,
    "gpt": 8 if CUDA else 2,
    "resnet50": 256 if CUDA else 2,
}
"""Each workload's batch when --ampbench-batch-sizes is not given: samples for the MLP,
sequences of its context for gpt (1024 tokens each at gpt2-124m), images for resnet50 (224×224
on CUDA, a common per-GPU batch)."""


@dataclass(frozen=True)
class Spec:
    model: str
    mode: str
    batch_size: int
    phase: str

    @property
    def id(self) -> str:
        # The optimizer is left out of the name on purpose: two saved runs, one per optimizer
        # (or one per commit), then compare benchmark by benchmark. The MLP's names are those
        # of the saves made before workloads, so that they compare with them.
        name = f"{self.mode}-b{self.batch_size}-{self.phase}"
        return name if self.model == "mlp" else f"{self.model}-{name}"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "benchmarks" in item.path.parts:
            item.add_marker(pytest.mark.bench_suite)


DEFAULT_MODELS = ("mlp",)
"""The workloads of the suite when --ampbench-models is not given."""
DEFAULT_MODES = ("fp32", "tf32", "fp16-amp", "bf16-amp")
"""The modes of the suite when --ampbench-modes is not given: the question's (the README's)."""

CPU_LEFT_OUT = ("resnet50",)
"""Built-in workloads the suite's CPU form leaves out unless --ampbench-models names them (`all`
does not):
resnet50's tiny step takes about 0.4 s on two cores and 5 s under fp16 autocast (the CPU has no
fast float16 convolutions), minutes over every mode, phase and round."""


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "spec" not in metafunc.fixturenames:
        return
    given = suite_options(metafunc.config)
    models = given["models"] or list(DEFAULT_MODELS)
    if not CUDA and metafunc.config.getoption("--ampbench-models") == "all":
        models = [w for w in models if w not in CPU_LEFT_OUT]
    modes = given["modes"] or [m for m in DEFAULT_MODES if m in MODES]
    # Model, mode and batch outermost, phase innermost: the four phases of one case run back to
    # back on one train state, which is built once and dropped before the next case's.
    specs = [
        Spec(w, m, b, p)
        for w in models
        for m in modes
        for b in given["batch_sizes"] or [DEFAULT_BATCH[w]]
        for p in given["phases"] or PHASES
    ]
    metafunc.parametrize("spec", specs, ids=[s.id for s in specs])


@dataclass(frozen=True)
class SuiteConfig:
    device: str
    preset: str
    optimizer: str
    rounds: int
    warmup_rounds: int
    iterations: int


@pytest.fixture(scope="session")
def suite(pytestconfig: pytest.Config) -> SuiteConfig:
    given = suite_options(pytestconfig)  # checked at start-up (tests/conftest.py)
    return SuiteConfig(
        device="cuda" if CUDA else "cpu",
        preset=given["preset"] or ("seed" if CUDA else "tiny"),
        optimizer=given["optimizer"],
        rounds=given["rounds"] or (20 if CUDA else 2),
        warmup_rounds=3 if CUDA else 1,
        iterations=5 if CUDA else 2,
    )


class _StateCache:
    """Holds the train state of one case at a time: the seed model's state is several GiB."""

    def __init__(self) -> None:
        self.case: Case | None = None
        self.state: TrainState | None = None

    def get(self, case: Case) -> TrainState:
        if case != self.case:
            self.state = None
            if CUDA:
                torch.cuda.empty_cache()
            self.case, self.state = case, build(resolve(case))
            # As the harness times it: a scaled mode's loss scale settles first, so that no
            # timed round is a step GradScaler skipped (`bench.measure.timing.settle`).
            scale_watch = watch(self.state)
            if scale_watch is not None:
                s = self.state
                settle({"step": lambda: train_step(s)}, scale_watch, clock_for(case.device))
        assert self.state is not None
        return self.state


@pytest.fixture(scope="session")
def state_cache() -> Iterator[_StateCache]:
    cache = _StateCache()
    yield cache
    cache.state = None


def _storage_problem(storage: str) -> str | None:
    """Why pytest-benchmark could not save into `storage` (`file://PATH` or a path), or None.

    pytest-benchmark saves under `PATH/<machine id>/` only after the whole suite has run, and a
    folder it cannot write there loses every timing: this is checked before anything runs."""
    from pytest_benchmark.utils import get_machine_id

    if "://" in storage and not storage.startswith("file://"):
        return None  # elasticsearch: pytest-benchmark reports its own errors
    folder = Path(storage.removeprefix("file://")) / get_machine_id()
    existing = next(p for p in (folder, *folder.parents) if p.exists())
    if not existing.is_dir():
        return f"{existing} is not a directory"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{existing} is not writable"
    return None


def pytest_configure(config: pytest.Config) -> None:
    memory_gate.configure(config)  # the memory gate (--ampbench-memory-compare), checked
    saving = config.getoption("benchmark_save", None) or config.getoption(
        "benchmark_autosave", None
    )
    if saving and not config.getoption("benchmark_disable", False):
        storage = config.getoption("benchmark_storage")
        problem = _storage_problem(storage)
        if problem is not None:
            raise pytest.UsageError(
                f"--benchmark-storage {storage}: {problem}, so the timings could not be saved"
            )


def pytest_sessionstart(session: pytest.Session) -> None:
    # pytest-benchmark loads the runs to compare with at configure time, but says that none was
    # found only after the whole suite has run: say it before.
    bench_session = getattr(session.config, "_benchmarksession", None)
    if bench_session is None or not bench_session.compare_fail or bench_session.compared_mapping:
        return
    compare = session.config.getoption("benchmark_compare")
    raise pytest.UsageError(
        f"--benchmark-compare-fail needs a saved run to compare with, and --benchmark-compare"
        f"{'' if compare is True else '=' + str(compare)} found none in {bench_session.storage}"
    )


@pytest.hookimpl(wrapper=True)
def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> Iterator[None]:
    """pytest-benchmark's `--benchmark-compare-fail` gate raises from its terminal summary, which
    pytest reports as a traceback (an INTERNALERROR on older pytest): end instead with the
    regressions it has listed, one line, and exit status 1."""
    from pytest_benchmark.session import PerformanceRegression

    try:
        return (yield)
    except PerformanceRegression:
        pytest.exit("--benchmark-compare-fail: performance has regressed (listed above)", 1)
    except pytest.UsageError as exc:  # --benchmark-compare found no saved run to compare with
        pytest.exit(str(exc), pytest.ExitCode.USAGE_ERROR)


def pytest_benchmark_update_commit_info(config: pytest.Config, commit_info: dict) -> None:
    """The saved run's commit as ampbench knows it (`bench.measure.env.git_commit`): on a copied
    working tree git cannot tell, and pytest-benchmark would record `unknown`."""
    from bench.measure.env import git_commit

    sha, dirty = git_commit()
    if sha is not None:
        commit_info["id"] = sha
        commit_info["dirty"] = bool(dirty)
