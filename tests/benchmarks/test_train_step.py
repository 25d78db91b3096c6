"""pytest-benchmark suite: each phase of the harness's own train step, per mode and batch size.

pytest-benchmark reads a host clock, and CUDA work is asynchronous, so every timed target ends
with `torch.cuda.synchronize()`; phases that need earlier work (backward needs a forward) get it
from an untimed `setup` that also synchronizes, so none of it spills into the timed call.
Compare saved runs with `pytest-benchmark compare` or `--benchmark-compare` (see the README).
After timing, each test checks what it timed: the phase ran every round, the forward's loss is
finite, the backward left gradients, the optimizer moved the weights and dropped the gradients.
"""

from __future__ import annotations

import pytest
import torch

from bench.measure.roofline import optimizer_bytes, step_work
from bench.modes.mode import MODES
from bench.modes.plan import resolve
from bench.modes.step import backward, forward, optimizer_step, train_step
from bench.workloads.registry import get, make_case
from tests.benchmarks.conftest import CUDA, Spec, SuiteConfig


def _sync() -> None:
    if CUDA:
        torch.cuda.synchronize()


def test_train_step(benchmark, spec: Spec, suite: SuiteConfig, state_cache) -> None:
    workload = get(spec.model)
    preset = suite.preset if spec.model == "mlp" else workload.default_preset[suite.device]
    case = make_case(
        spec.model,
        preset,
        mode=spec.mode,
        optimizer=suite.optimizer,
        batch_size=spec.batch_size,
        device=suite.device,
    )
    plan = resolve(case)
    reason = plan.unsupported_reason
    if reason is not None:  # torchao missing, or no float8 GPU: the harness makes it a row
        pytest.skip(reason)
    mode = MODES[spec.mode]
    # The step's phases enter the mode's precision context (TF32, autocast) themselves.
    s = state_cache.get(case)
    # A few weights of each tensor, to tell afterwards whether the phase moved them (a copy of
    # all of them would hold GiB on the seed preset, inside the measured peak).
    before = [p.detach().flatten()[:256].clone() for p in s.model.parameters()]
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

    calls = []

    def counted(target):
        def run(*args):
            calls.append(spec.phase)
            return target(*args)

        return run

    timed = dict(rounds=suite.rounds, warmup_rounds=suite.warmup_rounds)
    if spec.phase == "forward":
        target, extra = counted(lambda: (forward(s), _sync())), dict(iterations=suite.iterations)
    elif spec.phase == "backward":
        target, extra = counted(lambda loss: (backward(s, loss), _sync())), dict(setup=fresh_loss)
    elif spec.phase == "optimizer":
        target, extra = counted(lambda: (optimizer_step(s), _sync())), dict(setup=fresh_grads)
    else:
        target, extra = counted(lambda: (train_step(s), _sync())), dict(iterations=suite.iterations)
    result, _ = benchmark.pedantic(target, **extra, **timed)

    work = step_work(plan.workload, plan.size, case.batch_size)
    phase_flops = {
        "forward": work.fwd_flop,
        "backward": work.bwd_flop,
        "step": work.fwd_flop + work.bwd_flop,
    }.get(spec.phase)
    opt_bytes = optimizer_bytes(work.num_params, mode.scale_loss)
    # Under --benchmark-disable nothing is timed and there are no stats.
    median_s = benchmark.stats.stats.median if benchmark.stats else None
    info = benchmark.extra_info
    info.update(
        model=spec.model,
        mode=spec.mode,
        optimizer=suite.optimizer,
        batch_size=spec.batch_size,
        phase=spec.phase,
        preset=preset,
        device=suite.device,
        tflops=phase_flops / median_s / 1e12 if median_s and phase_flops else None,
        optimizer_gbytes_per_s=(
            opt_bytes / median_s / 1e9 if median_s and spec.phase == "optimizer" else None
        ),
        peak_alloc_gib=torch.cuda.max_memory_allocated() / 2**30 if CUDA else None,
        peak_reserved_gib=torch.cuda.max_memory_reserved() / 2**30 if CUDA else None,
        gpu=torch.cuda.get_device_name() if CUDA else "cpu",
        torch=torch.__version__,
    )

    # What was timed is the phase itself, on a state that trains (the timings are not checked:
    # the suite measures, it does not judge).
    if median_s is not None:
        assert median_s > 0 and benchmark.stats.stats.rounds == suite.rounds
        assert len(calls) >= suite.warmup_rounds + suite.rounds
        assert (info["tflops"] is None) == (spec.phase == "optimizer")
        assert (info["optimizer_gbytes_per_s"] is None) == (spec.phase != "optimizer")
        assert all(info[k] is None or info[k] > 0 for k in ("tflops", "optimizer_gbytes_per_s"))
    else:  # --benchmark-disable: the target runs once
        assert calls == [spec.phase]
    params = list(s.model.parameters())
    moved = any(
        not torch.equal(b, p.detach().flatten()[:256]) for b, p in zip(before, params, strict=True)
    )
    # GradScaler skips a step whose gradients overflowed and lowers its scale: a convolutional
    # network's first steps at the initial scale of 2**16 can (resnet50's BatchNorm gradients).
    stepped = moved or (mode.scale_loss and s.scaler.get_scale() < 2.0**16)
    if spec.phase == "forward":
        logits, loss = result
        # One row of outputs per sample (per token of each sequence for gpt), classes last.
        assert logits.shape[0] == spec.batch_size and logits.shape[-1] == case.sizes.values[-1]
        assert torch.isfinite(loss) and not moved
    elif spec.phase == "backward":
        assert all(p.grad is not None for p in params) and not moved
    elif spec.phase == "optimizer":
        assert stepped and all(p.grad is None for p in params)  # updated, then grads dropped
    else:
        assert torch.isfinite(result) and stepped and all(p.grad is None for p in params)
