"""pytest-benchmark suite: each phase of the harness's own train step, per mode and batch size.

pytest-benchmark reads a host clock, and CUDA work is asynchronous, so every timed target ends
with `torch.cuda.synchronize()`; phases that need earlier work (backward needs a forward) get it
from an untimed `setup` that also synchronizes, so none of it spills into the timed call.
Compare saved runs with `pytest-benchmark compare` or `--benchmark-compare` (see the README).
"""

from __future__ import annotations

import pytest
import torch

from bench.case import Case
from bench.model import PRESETS
from bench.modes import MODES
from bench.roofline import matmul_flops, optimizer_bytes
from bench.step import backward, forward, optimizer_step, train_step
from bench.variants import unsupported_reason
from tests.benchmarks.conftest import CUDA, Spec, SuiteConfig


def _sync() -> None:
    if CUDA:
        torch.cuda.synchronize()


def test_train_step(benchmark, spec: Spec, suite: SuiteConfig, state_cache) -> None:
    case = Case.of(
        PRESETS[suite.preset],
        mode=spec.mode,
        optimizer=suite.optimizer,
        batch_size=spec.batch_size,
        device=suite.device,
    )
    reason = unsupported_reason(case)
    if reason is not None:  # torchao missing, or no float8 GPU: the harness makes it a row
        pytest.skip(reason)
    mode = MODES[spec.mode]
    # The step's phases enter the mode's precision context (TF32, autocast) themselves.
    s = state_cache.get(case)
    _sync()
    if CUDA:
        torch.cuda.reset_peak_memory_stats()

    def fresh_loss():
        s.optimizer.zero_grad(set_to_none=True)  # backward writes, not accumulates, grads
        _, loss = forward(s)
        _sync()
        return (loss,), {}

    def fresh_grads():
        (loss,), _ = fresh_loss()
        backward(s, loss)
        _sync()

    timed = dict(rounds=suite.rounds, warmup_rounds=suite.warmup_rounds)
    if spec.phase == "forward":
        benchmark.pedantic(lambda: (forward(s), _sync()), iterations=suite.iterations, **timed)
    elif spec.phase == "backward":
        benchmark.pedantic(lambda loss: (backward(s, loss), _sync()), setup=fresh_loss, **timed)
    elif spec.phase == "optimizer":
        benchmark.pedantic(lambda: (optimizer_step(s), _sync()), setup=fresh_grads, **timed)
    else:
        benchmark.pedantic(lambda: (train_step(s), _sync()), iterations=suite.iterations, **timed)

    flops = matmul_flops(case.size, case.batch_size)
    phase_flops = {
        "forward": flops["fwd"],
        "backward": flops["bwd"],
        "step": flops["fwd"] + flops["bwd"],
    }.get(spec.phase)
    opt_bytes = optimizer_bytes(case.size, mode.scale_loss)
    # Under --benchmark-disable nothing is timed and there are no stats.
    median_s = benchmark.stats.stats.median if benchmark.stats else None
    benchmark.extra_info.update(
        mode=spec.mode,
        optimizer=suite.optimizer,
        batch_size=spec.batch_size,
        phase=spec.phase,
        preset=suite.preset,
        device=suite.device,
        tflops=phase_flops / median_s / 1e12 if median_s and phase_flops else None,
        optimizer_gbytes_per_s=(
            opt_bytes / median_s / 1e9 if median_s and spec.phase == "optimizer" else None
        ),
        peak_alloc_gib=torch.cuda.max_memory_allocated() / 2**30 if CUDA else None,
        gpu=torch.cuda.get_device_name() if CUDA else "cpu",
        torch=torch.__version__,
    )
    assert median_s is None or median_s > 0
