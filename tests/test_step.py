"""The single train step under CPU autocast: dtypes observed, weights updated, scaler engaged."""

import math

import pytest
import torch

from bench.measure import memory
from bench.plan.plan import resolve
from bench.plan.step import (
    ScaleWatch,
    backward,
    build,
    forward,
    optimizer_step,
    optimizer_update,
    skipped_by_scale,
    train_step,
)
from tests.conftest import tiny_case

# CPU autocast runs fp16 and bf16; the dtypes should match what CUDA autocast does.
EXPECTED = {
    "fp32": ("float32", "float32", "float32"),
    "tf32": ("float32", "float32", "float32"),
    "fp16-amp": ("float16", "float32", "float32"),
    "fp16-amp-noscale": ("float16", "float32", "float32"),
    "bf16-amp": ("bfloat16", "float32", "float32"),
}


@pytest.mark.parametrize("mode", list(EXPECTED))
def test_dtypes_of_logits_loss_and_param_grad(mode):
    s = build(resolve(tiny_case(mode=mode)))
    row = memory.measure(s)
    assert (row["output_dtype"], row["loss_dtype"], row["param_grad_dtype"]) == EXPECTED[mode]


@pytest.mark.parametrize("optimizer", ["foreach", "fused"])
@pytest.mark.parametrize("mode", list(EXPECTED))
def test_a_step_moves_every_weight(mode, optimizer):
    s = build(resolve(tiny_case(mode=mode, optimizer=optimizer)))
    before = [p.detach().clone() for p in s.model.parameters()]
    loss = train_step(s)
    assert torch.isfinite(loss)
    assert all(not torch.equal(b, p) for b, p in zip(before, s.model.parameters(), strict=True))
    assert all(p.grad is None for p in s.model.parameters())  # zero_grad(set_to_none=True)


def test_scaler_multiplies_the_loss_only_when_the_mode_scales():
    scaled = build(resolve(tiny_case(mode="fp16-amp")))
    plain = build(resolve(tiny_case(mode="fp16-amp-noscale")))
    assert scaled.scaler.is_enabled() and scaled.scaler.get_scale() == 2.0**16
    assert not plain.scaler.is_enabled()
    # Same seed, same weights: the scaled gradient is 2**16 times the plain one before unscaling.
    for s in (scaled, plain):
        _, loss = forward(s)
        backward(s, loss)
    ratio = scaled.model.fc3.weight.grad.abs().sum() / plain.model.fc3.weight.grad.abs().sum()
    assert ratio.item() == pytest.approx(2.0**16, rel=1e-2)
    optimizer_step(scaled)  # unscale, skip-or-step, update: must not raise on the CPU


def _snapshot(s):
    """Weights, Adam's step count per parameter and its moments, as copies."""
    params = [p.detach().clone() for p in s.model.parameters()]
    state = s.optimizer.state
    steps = [float(state[p]["step"]) if p in state else 0.0 for p in s.model.parameters()]
    moments = [state[p]["exp_avg"].clone() for p in s.model.parameters() if p in state]
    return params, steps, moments


def _same(a, b):
    return len(a) == len(b) and all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("optimizer", ["foreach", "fused"])
def test_gradscaler_skips_an_overflowed_step_and_halves_the_scale(optimizer):
    # What GradScaler is for: a step whose gradients hold an inf is not taken (weights, Adam's
    # moments and step count stay), and the scale halves, 2**16 -> 2**15. A clean step is taken
    # and keeps the scale (it grows only after 2000 clean steps).
    s = build(resolve(tiny_case(mode="fp16-amp", optimizer=optimizer)))
    assert s.scaler.get_scale() == 65536.0
    before = _snapshot(s)
    _, loss = forward(s)
    backward(s, loss)
    optimizer_update(s)
    clean = _snapshot(s)
    assert not any(torch.equal(b, c) for b, c in zip(before[0], clean[0], strict=True))
    assert clean[1] == [1.0] * 6  # six tensors: three weights, three biases
    assert s.scaler.get_scale() == 65536.0

    s.optimizer.zero_grad(set_to_none=True)
    _, loss = forward(s)
    backward(s, loss)
    s.model.fc2.weight.grad[0, 0] = float("inf")  # as a float16 gradient that overflowed
    optimizer_update(s)
    after = _snapshot(s)
    assert _same(after[0], clean[0])  # no weight moved
    assert after[1] == [1.0] * 6  # Adam's step count did not advance
    assert _same(after[2], clean[2])  # nor did its first moment
    assert s.scaler.get_scale() == 32768.0

    s.optimizer.zero_grad(set_to_none=True)
    _, loss = forward(s)
    backward(s, loss)
    optimizer_update(s)  # clean again, at the halved scale: taken
    assert _snapshot(s)[1] == [2.0] * 6 and s.scaler.get_scale() == 32768.0


def test_build_is_deterministic_from_the_seed():
    a, b = build(resolve(tiny_case(seed=7))), build(resolve(tiny_case(seed=7)))
    assert torch.equal(a.x, b.x) and torch.equal(a.y, b.y)
    pairs = zip(a.model.parameters(), b.model.parameters(), strict=True)
    assert all(torch.equal(p, q) for p, q in pairs)
    c = build(resolve(tiny_case(seed=8)))
    assert not torch.equal(a.x, c.x)


def test_memory_breakdown_on_cpu():
    s = build(resolve(tiny_case(mode="fp32")))
    row = memory.measure(s)
    n = sum(p.numel() for p in s.model.parameters())
    assert row["param_gib"] == pytest.approx(n * 4 / 2**30)
    assert row["grad_gib"] == pytest.approx(n * 4 / 2**30)
    assert row["optim_state_gib"] == pytest.approx(2 * n * 4 / 2**30, rel=1e-3)  # + step counters
    assert math.isnan(row["alloc_retries"]) and math.isnan(row["ooms"])  # CUDA's counters


@pytest.mark.cuda
def test_cuda_memory_peaks_are_measured():
    s = build(resolve(tiny_case(device="cuda", mode="bf16-amp")))
    row = memory.measure(s)
    assert row["peak_alloc_gib"] >= row["param_gib"] + row["optim_state_gib"]
    assert row["act_gib"] > 0
    # A tiny case on an H200: the allocator never had to free its cache, nor ran out.
    assert row["alloc_retries"] == 0 and row["ooms"] == 0


def test_the_scale_watch_sees_gradscaler_skip_a_step():
    """A real GradScaler on the CPU: a gradient that overflows at the scale makes it skip the
    step and halve the scale, which the watch reads as a skipped step; the next one applies."""
    weight = torch.nn.Parameter(torch.ones(4))
    opt = torch.optim.SGD([weight], lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**16)
    watch = ScaleWatch(scaler)

    def step(mult: float) -> None:
        opt.zero_grad()
        scaler.scale((weight * mult).sum()).backward()
        scaler.step(opt)
        scaler.update()

    watch.start()
    before = weight.detach().clone()
    step(1e35)  # × 2**16 overflows float32: inf gradients, the step skipped
    watch.mark()
    assert torch.equal(weight.detach(), before)
    step(1.0)
    watch.mark()
    assert watch.skipped() == [True, False]
    assert not torch.equal(weight.detach(), before)
    with pytest.raises(ValueError, match="enabled GradScaler"):
        ScaleWatch(torch.amp.GradScaler("cpu", enabled=False))


def test_a_scale_backed_off_to_zero_skips_every_step_and_says_so():
    """A state that overflows every step halves GradScaler's scale down to 0, where it stops
    falling; at 0 no step trains (a gradient scaled by 0 passes the overflow check, made before
    unscaling, and unscales to NaN: the weights become NaN)."""
    weight = torch.nn.Parameter(torch.ones(4))
    opt = torch.optim.SGD([weight], lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**-148)
    watch = ScaleWatch(scaler)
    watch.start()
    for mult in (math.inf, math.inf, math.inf, 1.0):  # the scale: 2**-149, 0, 0; then 0 again
        opt.zero_grad()
        scaler.scale((weight * mult).sum()).backward()
        scaler.step(opt)
        scaler.update()
        watch.mark()
    assert scaler.get_scale() == 0.0 and weight.detach().isnan().all()
    assert watch.skipped() == [True] * 4
    assert "scale is 0" in watch.stuck()


@pytest.mark.parametrize(
    ("scales", "skipped"),
    [([4.0, 2.0, 2.0, 4.0], [True, False, False]), ([2.0, 0.0, 0.0], [True, True]),
     ([2.0, math.inf, math.inf], [True, True]), ([2.0, math.nan], [True])],
)  # fmt: skip
def test_a_step_is_skipped_where_the_scale_fell_or_is_not_a_positive_number(scales, skipped):
    assert skipped_by_scale(torch.tensor(scales)).tolist() == skipped
