"""Shared fixtures: tiny CPU cases. Tests marked `cuda` are skipped when no GPU is present."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from bench import case as case_module
from bench.case import Case
from bench.model import PRESETS


def pytest_addoption(parser: pytest.Parser) -> None:
    # Options of the pytest-benchmark suite in tests/benchmarks; registered here because pytest
    # reads options only from the conftest files it loads at start-up.
    group = parser.getgroup("ampbench", "ampbench benchmark suite (tests/benchmarks)")
    group.addoption("--ampbench-preset", help="model size (default: seed on CUDA, tiny on CPU)")
    group.addoption("--ampbench-modes", help="comma list of modes (default: all)")
    group.addoption("--ampbench-batch-sizes", help="comma list (default: 1024 on CUDA, 8 on CPU)")
    group.addoption("--ampbench-optimizer", default="fused", help="foreach or fused (default)")
    group.addoption("--ampbench-rounds", type=int, help="rounds (default: 10 on CUDA, 2 on CPU)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)


def tiny_case(**overrides: object) -> Case:
    """A CPU case of the tiny preset; any field, sizes included, can be overridden."""
    size = PRESETS["tiny"]
    fields = dict(
        mode="fp32",
        optimizer="foreach",
        batch_size=8,
        input_size=size.input_size,
        hidden_size=size.hidden_size,
        num_classes=size.num_classes,
        device="cpu",
        warmup=1,
        steps=3,
    )
    return Case(**{**fields, **overrides})


@pytest.fixture
def cpu_ceilings() -> dict[str, float]:
    """Round numbers instead of measured ceilings, so floors are easy to check by hand."""
    return {
        "matmul_tflops_fp32": 1.0,
        "matmul_tflops_tf32": 2.0,
        "matmul_tflops_fp16": 4.0,
        "matmul_tflops_bf16": 4.0,
        "copy_gbps": 100.0,
        "ceiling_matmul_n": 64,
        "ceiling_copy_mib": 1,
    }


@dataclasses.dataclass(frozen=True, kw_only=True)
class WithKnob(Case):
    """A case with one more axis, as a later field of `Case` would add."""

    knob: str = "a"


@pytest.fixture
def knob(monkeypatch: pytest.MonkeyPatch) -> type[WithKnob]:
    """Make `WithKnob` the project's case class for one test (axes are read from it)."""
    monkeypatch.setattr(case_module, "Case", WithKnob)
    return WithKnob
