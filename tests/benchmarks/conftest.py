"""The pytest-benchmark suite's grid and its one shared train state.

Tests here carry the `bench_suite` marker. `./run_tests.sh` runs them in a short CPU form;
`./run_bench.sh pytest` runs them on the GPU with --benchmark-only and saves the result.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import torch

from bench.case import OPTIMIZERS, Case
from bench.model import PRESETS
from bench.modes import MODES
from bench.step import TrainState, build

PHASES = ("forward", "backward", "optimizer", "step")

CUDA = torch.cuda.is_available()


@dataclass(frozen=True)
class Spec:
    mode: str
    batch_size: int
    phase: str

    @property
    def id(self) -> str:
        # The optimizer is left out of the name on purpose: two saved runs, one per optimizer
        # (or one per commit), then compare benchmark by benchmark.
        return f"{self.mode}-b{self.batch_size}-{self.phase}"


def _list(text: str | None, default: list) -> list:
    return [t.strip() for t in text.split(",")] if text else default


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "benchmarks" in item.path.parts:
            item.add_marker(pytest.mark.bench_suite)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "spec" not in metafunc.fixturenames:
        return
    opt = metafunc.config.getoption
    modes = _list(opt("--ampbench-modes"), list(MODES))
    sizes = [int(b) for b in _list(opt("--ampbench-batch-sizes"), [1024 if CUDA else 8])]
    for mode in modes:
        if mode not in MODES:
            raise pytest.UsageError(f"--ampbench-modes: unknown mode {mode!r}")
    # Mode and batch outermost, phase innermost: the four phases of one case run back to back on
    # one train state, which is built once and dropped before the next case's.
    specs = [Spec(m, b, p) for m in modes for b in sizes for p in PHASES]
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
    optimizer = pytestconfig.getoption("--ampbench-optimizer")
    if optimizer not in OPTIMIZERS:
        raise pytest.UsageError(f"--ampbench-optimizer: unknown optimizer {optimizer!r}")
    preset = pytestconfig.getoption("--ampbench-preset") or ("seed" if CUDA else "tiny")
    if preset not in PRESETS:
        raise pytest.UsageError(f"--ampbench-preset: unknown preset {preset!r}")
    rounds = pytestconfig.getoption("--ampbench-rounds") or (10 if CUDA else 2)
    return SuiteConfig(
        device="cuda" if CUDA else "cpu",
        preset=preset,
        optimizer=optimizer,
        rounds=rounds,
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
            self.case, self.state = case, build(case)
        assert self.state is not None
        return self.state


@pytest.fixture(scope="session")
def state_cache() -> Iterator[_StateCache]:
    cache = _StateCache()
    yield cache
    cache.state = None


def pytest_benchmark_update_commit_info(config: pytest.Config, commit_info: dict) -> None:
    """The saved run's commit as ampbench knows it (`bench.env.git_commit`): on a copied
    working tree git cannot tell, and pytest-benchmark would record `unknown`."""
    from bench.env import git_commit

    sha, dirty = git_commit()
    if sha is not None:
        commit_info["id"] = sha
        commit_info["dirty"] = bool(dirty)
