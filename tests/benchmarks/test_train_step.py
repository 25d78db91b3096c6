"""pytest-benchmark suite: each phase of the harness's own train step, per mode and batch size.

pytest-benchmark reads a host clock, and CUDA work is asynchronous, so every timed target ends
with `torch.cuda.synchronize()`; phases that need earlier work (backward needs a forward) get it
from an untimed `setup` that also synchronizes, so none of it spills into the timed call.
Compare saved runs with `pytest-benchmark compare` or `--benchmark-compare` (see the README).
After timing, each test checks what it timed: the phase ran every round, the forward's loss is
finite, the backward left gradients, the optimizer moved the weights and dropped the gradients.
A round in which GradScaler skipped the update is left out of the round times (`skipped_rounds`
in the save's extra_info), and a benchmark whose every timed round was skipped fails.
"""

from __future__ import annotations

import pytest
import torch

from bench.measure.roofline import optimizer_bytes, step_work
from bench.modes.mode import MODES
from bench.plan.plan import resolve
from bench.plan.step import backward, forward, optimizer_step, train_step, watch
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
    # GradScaler may skip an update even after the scale settled: the scale is read after each
    # round (a copy on the device in pedantic's teardown, outside the timed call), and a round
    # after which it fell (or stopped being a positive number) is left out of the statistics,
    # as the harness leaves a skipped step out (`bench.measure.timing.SKIPPED`).
    scale_watch = watch(s) if spec.phase in ("optimizer", "step") else None
    if scale_watch is not None:
        scale_watch.start()
        timed["teardown"] = lambda *_: scale_watch.mark()
    if spec.phase == "forward":
        target, extra = counted(lambda: (forward(s), _sync())), dict(iterations=suite.iterations)
    elif spec.phase == "backward":
        target, extra = counted(lambda loss: (backward(s, loss), _sync())), dict(setup=fresh_loss)
    elif spec.phase == "optimizer":
        target, extra = counted(lambda: (optimizer_step(s), _sync())), dict(setup=fresh_grads)
    else:
        target, extra = counted(lambda: (train_step(s), _sync())), dict(iterations=suite.iterations)
    result, _ = benchmark.pedantic(target, **extra, **timed)
    skipped = _skipped_rounds(benchmark, scale_watch, suite)

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
        skipped_rounds=sum(skipped),
    )

    # What was timed is the phase itself, on a state that trains (the timings are not checked:
    # the suite measures, it does not judge).
    if median_s is not None:
        assert median_s > 0 and benchmark.stats.stats.rounds == suite.rounds - sum(skipped)
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
    # The update was applied: the weights moved, and in a mode that scales its loss, some timed
    # round was one GradScaler did not skip (a warm-up round may have moved the weights).
    stepped = moved and not (skipped and all(skipped))
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


def _skipped_rounds(benchmark, scale_watch, suite: SuiteConfig) -> list[bool]:
    """Which timed rounds held a step GradScaler skipped (none without a watch), those rounds'
    times taken out of the benchmark's: pytest-benchmark computes its statistics, and saves
    its rounds, from `stats.data` when they are read, after the test. Every round skipped:
    the test fails, with no training step to time."""
    if scale_watch is None:
        return []
    _sync()  # the teardowns' copies are there: reading them waits for nothing timed
    flags = scale_watch.skipped()  # the warm-up rounds', the timed ones', then pedantic's extra
    if not benchmark.stats:  # --benchmark-disable: one untimed call, no teardown
        scale_watch.mark()
        return scale_watch.skipped()
    timed = flags[suite.warmup_rounds : suite.warmup_rounds + suite.rounds]
    if all(timed):
        pytest.fail(f"GradScaler skipped every one of the {suite.rounds} timed rounds")
    data = benchmark.stats.stats.data
    data[:] = [ms for ms, skip in zip(data, timed, strict=True) if not skip]
    return timed
