"""Shared fixtures: tiny CPU cases. Tests marked `cuda` are skipped when no GPU is present."""

from __future__ import annotations

import builtins
import dataclasses
import errno
import io
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
import torch

from bench import quiet
from bench.cases import case as case_module
from bench.cases.case import Case
from bench.cases.sizes import Sizes
from bench.ground import cards
from bench.ground.cards import MLP as mlp_card
from bench.ground.optimizers import OPTIMIZERS
from bench.modes.mode import MODES
from bench.plan.plan import Plan, resolve
from bench.store.run_env import Ceilings
from bench.workloads.mlp import PRESETS
from tests.benchmarks import memory_gate

PHASES = ("forward", "backward", "optimizer", "step")
"""The phases the benchmark suite (tests/benchmarks) times, each a benchmark of its own."""


def pytest_addoption(parser: pytest.Parser) -> None:
    # Options of the pytest-benchmark suite in tests/benchmarks; registered here because pytest
    # reads options only from the conftest files it loads at start-up.
    group = parser.getgroup("ampbench", "ampbench benchmark suite (tests/benchmarks)")
    group.addoption(
        "--ampbench-models",
        help="comma list of workloads, or all (default: mlp; see tests/benchmarks/conftest.py)",
    )
    group.addoption(
        "--ampbench-preset",
        help="the MLP's size (default: seed on CUDA, tiny on CPU); other workloads take their own",
    )
    group.addoption(
        "--ampbench-modes",
        help="comma list of modes, or all (default: fp32, tf32, fp16-amp, bf16-amp)",
    )
    group.addoption(
        "--ampbench-batch-sizes",
        help="comma list (default: the MLP 1024 on CUDA, 8 on CPU; gpt 8 sequences, 2 on CPU)",
    )
    group.addoption(
        "--ampbench-phases",
        help="comma list of forward, backward, optimizer and step, or all (default: all); "
        "a CI gate times the step alone (docs/comparing.md)",
    )
    group.addoption("--ampbench-optimizer", default="fused", help="foreach or fused (default)")
    group.addoption("--ampbench-rounds", help="rounds (default: 20 on CUDA, 2 on CPU)")
    memory_gate.add_options(group)  # --ampbench-memory-compare, --ampbench-memory-fail
    parser.addoption(
        "--zoo",
        action="store_true",
        help="run the whole model-zoo conformance suite (tests/test_zoo.py), not only CI's part",
    )


def _names(option: str, text: str, choices: Iterable[str]) -> list[str]:
    """A comma list of names, each one of `choices`; `all` is every choice."""
    if text.strip() == "all":
        return list(choices)
    items = [t.strip() for t in text.split(",")]
    for item in items:
        if item not in choices:
            raise pytest.UsageError(
                f"{option} {text!r}: unknown {item!r}; choose from {', '.join(choices)}"
            )
    return items


def _positive(option: str, text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise pytest.UsageError(f"{option}: {text!r} is not a positive integer")
    return value


def suite_options(config: pytest.Config) -> dict[str, Any]:
    """The --ampbench-* options of the benchmark suite, checked; None where not given.

    A bad value is one line that names it (`pytest.UsageError`, pytest's exit status 4), said
    once before any test runs rather than as a failure of every test of the suite."""
    opt = config.getoption
    out: dict[str, Any] = {"preset": opt("--ampbench-preset")}
    if out["preset"] is not None and out["preset"] not in PRESETS:
        raise pytest.UsageError(
            f"--ampbench-preset {out['preset']!r}: choose from {', '.join(PRESETS)}"
        )
    models = opt("--ampbench-models")
    out["models"] = _names("--ampbench-models", models, cards.CARDS) if models is not None else None
    modes = opt("--ampbench-modes")
    out["modes"] = _names("--ampbench-modes", modes, MODES) if modes is not None else None
    phases = opt("--ampbench-phases")
    out["phases"] = _names("--ampbench-phases", phases, PHASES) if phases is not None else None
    sizes = opt("--ampbench-batch-sizes")
    out["batch_sizes"] = (
        [_positive("--ampbench-batch-sizes", t.strip()) for t in sizes.split(",")]
        if sizes is not None
        else None
    )
    for option, values in (
        ("--ampbench-modes", modes),
        ("--ampbench-phases", phases),
        ("--ampbench-batch-sizes", sizes),
    ):
        items = [t.strip() for t in values.split(",")] if values is not None else []
        repeated = [t for i, t in enumerate(items) if t in items[:i]]
        if repeated:
            raise pytest.UsageError(f"{option} {values!r}: {repeated[0]!r} is listed twice")
    out["optimizer"] = opt("--ampbench-optimizer")
    if out["optimizer"] not in OPTIMIZERS:
        raise pytest.UsageError(
            f"--ampbench-optimizer {out['optimizer']!r}: choose from {', '.join(OPTIMIZERS)}"
        )
    rounds = opt("--ampbench-rounds")
    out["rounds"] = _positive("--ampbench-rounds", rounds) if rounds is not None else None
    return out


def _cores() -> int:
    """The cores this process may run on (a container or `taskset` may allow fewer than the
    machine has); run_tests.sh counts them the same way."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _share_the_cores() -> None:
    """Under pytest-xdist, each worker takes its share of the cores: torch's CPU ops otherwise
    start a thread per core in every worker and in every process a test starts, and on a
    16-core GPU box with 8 workers a one-second CPU test took minutes."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers > 1:
        threads = str(max(1, _cores() // workers))
        os.environ.setdefault("OMP_NUM_THREADS", threads)  # the processes tests start
        torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))


def pytest_configure(config: pytest.Config) -> None:
    suite_options(config)  # a bad --ampbench-* value ends the run here, in one line
    _share_the_cores()
    if not config.pluginmanager.hasplugin("xdist"):  # its mark, known to --strict-markers
        config.addinivalue_line("markers", "xdist_group(name): pytest-xdist's group of tests")
    if os.environ.get("PYTEST_XDIST_WORKER"):
        config.pluginmanager.register(_GroupIds(), "ampbench-group-ids")
    # Known warnings of torch and torchao (bench.quiet) stay out of the session's summary, as
    # they stay out of the command line's output; AMPBENCH_DEBUG=1 shows them.
    for line in quiet.pytest_filters():
        config.addinivalue_line("filterwarnings", line)


def _shares_a_fixture(item: pytest.Item) -> bool:
    """Whether `item` uses a fixture built once per module or class (a torchrun run, a study, a
    clone of the project)."""
    info = getattr(item, "_fixtureinfo", None)  # pytest's; without it, nothing is grouped
    defs = info.name2fixturedefs.values() if info is not None else ()
    return any(d and d[-1].scope in ("module", "class") for d in defs)


# tryfirst: before pytest-xdist's own hook, which reads the xdist_group marks added here.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    no_gpu = pytest.mark.skip(reason="needs a CUDA GPU")
    not_asked = pytest.mark.skip(reason="the rest of the model zoo runs with --zoo")
    for item in items:
        if "cuda" in item.keywords and not torch.cuda.is_available():
            item.add_marker(no_gpu)
        if "zoo" in item.keywords and not config.getoption("--zoo"):
            item.add_marker(not_asked)
        # Under `--dist loadgroup` (run_tests.sh) the tests that share a module's fixture run
        # on one worker, which builds it once; with `--dist load` the GPU box built
        # test_distributed.py's two-rank run on two workers, a minute each. The other tests go
        # to whichever worker is free, a file's apart (test_zoo.py's take minutes together).
        if _shares_a_fixture(item):
            item.add_marker(pytest.mark.xdist_group(item.path.stem))
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # The groups first (the longest units: torchrun runs of tens of seconds), the single
        # tests after them: pytest-xdist hands out work in this order, and a group handed out
        # last (test_zoo.py's DDP/FSDP launch) kept one worker busy after the other had ended.
        items.sort(key=lambda item: not _shares_a_fixture(item))


class _GroupIds:
    """pytest-xdist's scheduler reads a test's group from its id (`test_x.py::test_a@group`),
    which its worker sets through `item._nodeid`; pytest 9.2 keeps the id in `item._id` and no
    longer reads `_nodeid`, so the tests of a group spread as under `--dist load` and each worker
    that ran one of them built the group's fixture again (test_distributed.py's two-rank run,
    twice). After xdist's hook, a test whose id does not end with its group yet gets it here, as
    xdist 3.8 writes it."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        if not getattr(config.option, "loadgroup", False):
            return
        for item in items:
            groups = {
                str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                for m in item.iter_markers("xdist_group")
            }
            suffix = "@" + "_".join(sorted(groups))
            if groups and not item.nodeid.endswith(suffix) and hasattr(item, "_id"):
                item._id = type(item._id).parse(item.nodeid + suffix)


def tiny_case(**overrides: object) -> Case:
    """A CPU case of the MLP's tiny preset; any field can be overridden, and any of the MLP's
    sizes by its name (`input=2048`)."""
    named = {k: overrides.pop(k) for k in list(overrides) if k in mlp_card.sizes}
    sizes = Sizes.of({**PRESETS["tiny"].named(), **named})
    fields = dict(
        mode="fp32", optimizer="foreach", batch_size=8, sizes=sizes, device="cpu", warmup=1, steps=3
    )
    return Case(**{**fields, **overrides})


def tiny_plan(**overrides: object) -> Plan:
    """`tiny_case(**overrides)` resolved, as a job hands it to what it runs."""
    return resolve(tiny_case(**overrides))


@pytest.fixture
def cpu_ceilings() -> Ceilings:
    """Round numbers instead of measured ceilings, so floors are easy to check by hand."""
    return Ceilings.from_record(
        {
            "matmul_tflops_fp32": 1.0,
            "matmul_tflops_tf32": 2.0,
            "matmul_tflops_fp16": 4.0,
            "matmul_tflops_bf16": 4.0,
            "copy_gbps": 100.0,
            "ceiling_matmul_n": 64,
            "ceiling_copy_mib": 1,
        }
    )


@pytest.fixture
def read_only(monkeypatch: pytest.MonkeyPatch) -> Callable[[Path], None]:
    """`read_only(folder)`: from then on everything under `folder` behaves as on a read-only file
    system, for root too (root writes a folder whatever its mode bits say): opening a file there
    to write, making, removing or renaming anything there fail with EROFS, and `os.access` says
    it is not writable."""
    frozen: list[Path] = []

    def inside(path: object) -> bool:
        if isinstance(path, int):  # a file descriptor: opened before the folder was frozen
            return False
        p = Path(os.fsdecode(path)).absolute()
        return any(p == f or f in p.parents for f in frozen)

    def refuse(path: object) -> OSError:
        return OSError(errno.EROFS, os.strerror(errno.EROFS), os.fsdecode(path))

    real_open, real_access = builtins.open, os.access

    def open_(file, mode="r", *args, **kwargs):
        if inside(file) and any(c in mode for c in "wax+"):
            raise refuse(file)
        return real_open(file, mode, *args, **kwargs)

    def access(path, mode, *args, **kwargs):
        if inside(path) and mode & os.W_OK:
            return False
        return real_access(path, mode, *args, **kwargs)

    def guard(real: Callable) -> Callable:
        def call(path, *args, **kwargs):
            if inside(path):
                raise refuse(path)
            return real(path, *args, **kwargs)

        return call

    monkeypatch.setattr(builtins, "open", open_)
    monkeypatch.setattr(io, "open", open_)  # what pathlib opens files with
    monkeypatch.setattr(os, "access", access)
    for name in ("mkdir", "replace", "rename", "remove", "unlink", "rmdir"):
        monkeypatch.setattr(os, name, guard(getattr(os, name)))
    return lambda folder: frozen.append(Path(folder).absolute())


@dataclasses.dataclass(frozen=True, kw_only=True)
class WithKnob(Case):
    """A case with one more axis, as a later field of `Case` would add."""

    knob: str = "a"


@pytest.fixture
def knob(monkeypatch: pytest.MonkeyPatch) -> type[WithKnob]:
    """Make `WithKnob` the project's case class for one test (axes are read from it)."""
    monkeypatch.setattr(case_module, "Case", WithKnob)
    return WithKnob
