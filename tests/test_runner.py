"""Cases as rows: the ok path, and faults turned into statuses while the suite goes on."""

import math
import statistics

import pytest
import torch

from bench.execution import variants
from bench.jobs.suite import run_suite
from bench.measure import adaptive, overhead, runner
from bench.measure.runner import run_case
from bench.plan.plan import resolve
from bench.store import results
from tests.conftest import tiny_case


def test_ok_row_has_the_promised_columns(cpu_ceilings):
    row, samples = run_case(resolve(tiny_case(mode="bf16-amp", optimizer="fused")), cpu_ceilings)
    assert row["status"] == "ok", row["error"]
    for col in results.leading_columns():
        if col.startswith(("speedup", "peak")) or col == "scaling_efficiency":
            continue  # derived when loading / not measured on the CPU
        assert col in row, col
    assert set(samples) == {"fwd", "bwd", "step", "total"}
    assert all(len(v) == 3 for v in samples.values())
    assert row["tflops"] == pytest.approx((row["fwd_gflop"] + row["bwd_gflop"]) / row["total_ms"])
    assert row["pct_of_floor"] == pytest.approx(row["floor_ms"] / row["total_ms"] * 100)
    assert row["samples_per_s"] == pytest.approx(8 / row["total_ms"] * 1e3)
    assert row["ceiling_tflops"] == cpu_ceilings.matmul("bf16")
    assert (row["tf32_matmul"], row["autocast_dtype"]) == (False, "bfloat16")


# Tiny at batch 8: matmul FLOPs 2*8*(32*64 + 64*64 + 64*10) = 108544 forward and 184320 backward
# (input and weight gradients, none for fc1's input); 6922 parameters.
# (mode, matmul ceiling TFLOP/s of cpu_ceilings, optimizer bytes at 100 GB/s, cast bytes)
BY_HAND = {
    "fp32": (1.0, 6922 * 28, 0),
    "tf32": (2.0, 6922 * 28, 0),
    # Scaled: the inf check reads each float32 gradient once more, 4 bytes.
    "fp16-amp": (4.0, 6922 * 32, 6922 * 12 + 8 * 32 * 6),
    # Autocast casts each parameter (4 + 2 bytes) and its gradient (2 + 4), and the input batch.
    "bf16-amp": (4.0, 6922 * 28, 6922 * 12 + 8 * 32 * 6),
    # bf16 parameters: Adam moves 7 two-byte words per parameter, and nothing is cast.
    "bf16-pure": (4.0, 6922 * 14, 0),
}


@pytest.mark.parametrize("mode", list(BY_HAND))
def test_a_rows_work_and_floors_by_hand(mode, cpu_ceilings):
    tflops, opt_bytes, cast_bytes = BY_HAND[mode]
    row, _ = run_case(resolve(tiny_case(mode=mode, optimizer="fused")), cpu_ceilings)
    assert row["status"] == "ok", row["error"]
    assert (row["fwd_gflop"], row["bwd_gflop"]) == pytest.approx((108544e-9, 184320e-9))
    assert row["ceiling_tflops"] == tflops
    fwd_ms, bwd_ms = 108544 / tflops * 1e-9, 184320 / tflops * 1e-9  # FLOP / (T/s), in ms
    step_ms = opt_bytes / 100e9 * 1e3
    assert row["fwd_floor_ms"] == pytest.approx(fwd_ms)
    assert row["bwd_floor_ms"] == pytest.approx(bwd_ms)
    assert row["step_floor_ms"] == pytest.approx(step_ms)
    assert row["floor_ms"] == pytest.approx(fwd_ms + bwd_ms + step_ms)
    assert row["cast_gbytes"] == pytest.approx(cast_bytes / 1e9)
    # The measured figures: 292864 FLOPs and 8 samples per step, whatever the step took.
    assert row["tflops"] * row["total_ms"] == pytest.approx(292864e-9)
    assert row["samples_per_s"] * row["total_ms"] == pytest.approx(8e3)
    assert row["pct_of_floor"] * row["total_ms"] == pytest.approx(100 * row["floor_ms"])


def test_tf32_flags_recorded_as_in_force(cpu_ceilings):
    row, _ = run_case(resolve(tiny_case(mode="tf32")), cpu_ceilings)
    assert row["tf32_matmul"] is True and row["tf32_cudnn"] is True


def test_out_of_memory_becomes_a_row(monkeypatch, cpu_ceilings):
    def oom(plan, **kwargs):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 9.00 GiB")

    monkeypatch.setattr(runner, "build", oom)
    row, samples = run_case(resolve(tiny_case()), cpu_ceilings)
    assert row["status"] == "oom" and "9.00 GiB" in row["error"]
    assert samples == {}


def test_nonfinite_loss_becomes_a_row(monkeypatch, cpu_ceilings):
    real_forward = variants.forward

    def poisoned(s):
        logits, loss = real_forward(s)
        return logits, loss * float("nan")

    monkeypatch.setattr(variants, "forward", poisoned)
    row, _ = run_case(resolve(tiny_case()), cpu_ceilings)
    assert row["status"] == "nonfinite"
    assert row["error"] == "4 of 4 losses were not finite"  # 1 warm-up + 3 timed
    assert math.isnan(row["final_loss"])


def test_other_exception_becomes_an_error_row(monkeypatch, cpu_ceilings):
    def broken(s):
        raise RuntimeError("cuBLAS said no\nsecond line")

    monkeypatch.setattr(variants, "optimizer_step", broken)
    row, _ = run_case(resolve(tiny_case()), cpu_ceilings)
    assert row["status"] == "error"
    assert row["error"] == "RuntimeError: cuBLAS said no"


def test_suite_goes_on_after_a_fault_and_writes_rows(monkeypatch, tmp_path, cpu_ceilings):
    real_build = runner.build

    def oom_for_fp16(plan, **kwargs):
        if plan.case.mode == "fp16-amp":
            raise torch.cuda.OutOfMemoryError("out of memory")
        return real_build(plan, **kwargs)

    monkeypatch.setattr(runner, "build", oom_for_fp16)
    cases = [tiny_case(mode=m) for m in ("fp32", "fp16-amp", "bf16-amp")]
    run_suite([resolve(c) for c in cases], tmp_path, cpu_ceilings, log=lambda msg: None)
    df = results.load(tmp_path)
    assert list(df["status"]) == ["ok", "oom", "ok"]
    samples = results.load_samples(tmp_path)
    assert set(samples["case_id"]) == {cases[0].case_id, cases[2].case_id}


def test_resume_runs_only_missing_cases(monkeypatch, tmp_path, cpu_ceilings):
    cases = [tiny_case(mode=m) for m in ("fp32", "tf32", "bf16-amp")]
    real_run_case = runner.run_case
    seen = []

    def killed_on_third(plan, ceilings):
        seen.append(plan.case.mode)
        if len(seen) == 3:
            raise KeyboardInterrupt
        return real_run_case(plan, ceilings)

    monkeypatch.setattr(runner, "run_case", killed_on_third)
    with pytest.raises(KeyboardInterrupt):
        run_suite([resolve(c) for c in cases], tmp_path, cpu_ceilings, log=lambda msg: None)
    assert list(results.load(tmp_path)["mode"]) == ["fp32", "tf32"]

    seen.clear()
    monkeypatch.setattr(runner, "run_case", real_run_case)
    ran = []
    run_suite([resolve(c) for c in cases], tmp_path, cpu_ceilings, log=ran.append)
    assert len(ran) == 2 and ran[0].startswith("[3/3] bf16-amp")  # progress line, then result
    assert list(results.load(tmp_path)["mode"]) == ["fp32", "tf32", "bf16-amp"]


def test_repeats_are_windows_of_one_case(cpu_ceilings):
    case = tiny_case(steps=3, repeats=2)
    row, samples = run_case(resolve(case), cpu_ceilings)
    assert row["status"] == "ok", row["error"]
    assert all(len(v) == 6 for v in samples.values())  # 2 windows of 3 steps, one after another
    assert row["repeats"] == 2 and row["steps"] == 3
    # Not an axis: the case keeps its id, and a run with more windows matches it in compare.
    assert case.case_id == tiny_case(steps=3).case_id and "repeats" not in results.axes()


def test_repeat_windows_are_stored_beside_the_flat_samples(monkeypatch, tmp_path, cpu_ceilings):
    def two_windows(phases, *, warmup, steps, rule, clock, warmup_ms, watch):
        assert (steps, rule.min_windows, rule.max_windows) == (3, 2, 2)
        return [
            {"fwd": [1.0, 1.0, 1.0], "bwd": [1.0] * 3, "step": [1.0] * 3, "total": [1.0, 2.0, 3.0]},
            {"fwd": [2.0, 2.0, 2.0], "bwd": [1.0] * 3, "step": [1.0] * 3, "total": [4.0, 5.0, 6.0]},
        ], "fixed"

    monkeypatch.setattr(runner, "time_windows", two_windows)
    run_suite(
        [resolve(tiny_case(steps=3, repeats=2))], tmp_path, cpu_ceilings, log=lambda msg: None
    )
    monkeypatch.undo()  # a case of one window, timed for real
    run_suite(
        [resolve(tiny_case(mode="tf32", steps=3))], tmp_path, cpu_ceilings, log=lambda msg: None
    )
    first, second = results.read_rows(tmp_path / results.SAMPLES)
    assert first["samples_ms"]["total"] == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert first["repeats_ms"]["total"] == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    assert first["repeats_ms"]["fwd"] == [[1.0] * 3, [2.0] * 3]
    # The row's statistics are over every step of both windows.
    assert results.load(tmp_path).loc[0, "total_ms"] == 3.5
    assert "repeats_ms" not in second and len(second["samples_ms"]["total"]) == 3


def test_rounds_interleave_the_cases_and_pool_their_windows(monkeypatch, tmp_path, cpu_ceilings):
    # Each call to the clock's window gives the next of these step times: case A gets 1 then 3,
    # case B 2 then 4, because the second round comes after a whole pass over the grid.
    order, base = [], iter([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])

    real_windows = runner.time_windows

    def windows(phases, **kwargs):
        ms = next(base)  # the steps run for real (losses are checked); their times are scripted
        timed, why = real_windows(phases, **kwargs)
        return [
            {name: [ms * (3 if name == "total" else 1)] * len(v) for name, v in w.items()}
            for w in timed
        ], why

    real = runner.run_case

    def logged(plan, ceilings, world=None):
        order.append(plan.case.mode)
        return real(plan, ceilings, world)

    monkeypatch.setattr(runner, "time_windows", windows)
    monkeypatch.setattr(runner, "run_case", logged)
    cases = [tiny_case(mode="fp32", steps=2), tiny_case(mode="tf32", steps=2)]
    run_suite([resolve(c) for c in cases], tmp_path, cpu_ceilings, rounds=2, log=lambda msg: None)
    assert order == ["fp32", "tf32", "fp32", "tf32"]
    kept = results.read_rows(tmp_path / results.ROUNDS)
    assert [(r["round"], r["repeats_ms"]["total"]) for r in kept] == [
        (1, [[3.0, 3.0]]),
        (1, [[6.0, 6.0]]),
    ]
    rows = {r["mode"]: r for r in results.read_rows(tmp_path / results.ROWS)}
    # Statistics over both rounds' windows: fp32's steps 3, 3 then 9, 9 have median 6.
    assert rows["fp32"]["total_ms"] == 6.0 and rows["fp32"]["rounds"] == 2
    assert rows["tf32"]["total_ms"] == 9.0
    samples = {r["case_id"]: r for r in results.read_rows(tmp_path / results.SAMPLES)}
    assert samples[cases[0].case_id]["repeats_ms"]["total"] == [[3.0, 3.0], [9.0, 9.0]]


def test_a_resumed_run_keeps_the_rounds_it_had(monkeypatch, tmp_path, cpu_ceilings):
    cases = [tiny_case(mode="fp32", steps=2), tiny_case(mode="tf32", steps=2)]
    real = runner.run_case
    calls = []

    def killed_in_round_two(plan, ceilings, world=None):
        calls.append(plan.case.mode)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return real(plan, ceilings, world)

    monkeypatch.setattr(runner, "run_case", killed_in_round_two)
    with pytest.raises(KeyboardInterrupt):
        run_suite(
            [resolve(c) for c in cases], tmp_path, cpu_ceilings, rounds=2, log=lambda msg: None
        )
    # fp32 finished both rounds; tf32 has its first round on disk, and only its second runs now.
    calls.clear()
    run_suite([resolve(c) for c in cases], tmp_path, cpu_ceilings, rounds=2, log=lambda msg: None)
    assert calls == ["tf32"]
    samples = results.read_rows(tmp_path / results.SAMPLES)
    assert [len(s["repeats_ms"]["total"]) for s in samples] == [2, 2]


def test_rounds_must_be_positive(tmp_path, cpu_ceilings):
    with pytest.raises(ValueError, match="rounds must be a positive integer, got 0"):
        run_suite([resolve(tiny_case())], tmp_path, cpu_ceilings, rounds=0)


def test_every_window_losses_are_checked(monkeypatch, cpu_ceilings):
    real_forward = variants.forward

    def poisoned(s):
        logits, loss = real_forward(s)
        return logits, loss * float("nan")

    monkeypatch.setattr(variants, "forward", poisoned)
    row, _ = run_case(resolve(tiny_case(repeats=2)), cpu_ceilings)
    assert row["error"] == "7 of 7 losses were not finite"  # 1 warm-up + 2 windows of 3


def test_a_new_grid_takes_the_default_repeats_and_an_old_record_one():
    from bench.jobs.configs import run_config
    from bench.jobs.session import DEFAULT_REPEATS, RunConfig

    cfg = run_config(device="cpu", preset="tiny", batch_sizes=[8])
    assert cfg.repeats == DEFAULT_REPEATS == 3
    assert {c.repeats for c in cfg.cases()} == {3}
    # From 2 windows up to 3, as the case's windows agree; --repeats alone is a count.
    assert cfg.min_repeats == 2 and {c.min_repeats for c in cfg.cases()} == {2}
    given = run_config(device="cpu", preset="tiny", repeats=5)
    assert (given.repeats, given.min_repeats) == (5, 5)
    # env.json before --repeats (and --min-repeats): one window, as it was measured.
    old = {k: v for k, v in cfg.record().items() if k not in ("repeats", "min_repeats")}
    assert (RunConfig.from_record(old).repeats, RunConfig.from_record(old).min_repeats) == (1, 0)
    with pytest.raises(ValueError, match="--min-repeats 4 is above --repeats 3"):
        run_config(device="cpu", preset="tiny", min_repeats=4)
    # Rounds time every case the same windows: each round's split evenly.
    rounds = run_config(device="cpu", preset="tiny", batch_sizes=[8], rounds=2)
    assert {c.min_repeats for c in rounds.cases()} == {0}


def test_overhead_measurement_compares_like_with_like():
    out = overhead.measure_overhead(resolve(tiny_case(steps=4)), windows=2, repeats=2)
    assert len(out["harness_samples_ms"]) == 8 and len(out["bare_window_step_ms"]) == 4
    assert out["harness_ms"] > 0 and out["bare_ms"] > 0
    assert out["overhead_pct"] == pytest.approx((out["harness_ms"] / out["bare_ms"] - 1) * 100)


@pytest.mark.cuda
def test_a_cuda_case_runs(cpu_ceilings):
    row, samples = run_case(
        resolve(tiny_case(device="cuda", mode="fp16-amp", optimizer="fused")), cpu_ceilings
    )
    assert row["status"] == "ok", row["error"]
    assert row["peak_alloc_gib"] > 0
    assert len(samples["total"]) == 3


@pytest.mark.cuda
def test_memory_left_before_a_case_is_not_its_peak(cpu_ceilings):
    case = tiny_case(device="cuda", mode="bf16-amp", optimizer="fused")
    clean, _ = run_case(resolve(case), cpu_ceilings)
    ballast = torch.empty(2**28, device="cuda")  # 1 GiB allocated before the case
    loaded, _ = run_case(resolve(case), cpu_ceilings)
    assert loaded["residue_gib"] >= clean["residue_gib"] + ballast.numel() * 4 / 2**30 - 1e-6
    assert loaded["peak_alloc_gib"] == pytest.approx(clean["peak_alloc_gib"], abs=0.01)


def test_no_residue_is_measured_on_the_cpu(cpu_ceilings):
    row, _ = run_case(resolve(tiny_case()), cpu_ceilings)
    assert math.isnan(row["residue_gib"])


def test_a_scaled_mode_is_timed_on_steps_that_applied_their_update(monkeypatch, cpu_ceilings):
    """fp16-amp with a loss large enough that GradScaler backs off from 2**16 for several steps:
    the harness settles the scale before timing (and says how many steps that took), so no timed
    step is a skipped one; without settling, the skipped steps are counted and left out."""
    case = tiny_case(mode="fp16-amp", loss_mult=2.0**8, steps=5)
    row, samples = run_case(resolve(case), cpu_ceilings)
    assert row["status"] == "ok", row["error"]
    assert row["scale_warmup_steps"] > adaptive.SETTLE_QUIET and row["skipped_steps"] == 0
    assert not any(math.isnan(v) for v in samples["total"])
    fp32, _ = run_case(resolve(tiny_case(steps=5)), cpu_ceilings)
    assert fp32["scale_warmup_steps"] == 0 and fp32["skipped_steps"] == 0

    monkeypatch.setattr(runner, "settle", lambda *args, **kwargs: 0)  # time from 2**16 on
    row, samples = run_case(resolve(case), cpu_ceilings)
    assert row["status"] == "ok", row["error"]
    skipped = [math.isnan(v) for v in samples["total"]]
    assert row["skipped_steps"] == sum(skipped) > 0
    for phase in ("fwd", "bwd", "step"):
        assert [math.isnan(v) for v in samples[phase]] == skipped
    applied = [v for v in samples["total"] if not math.isnan(v)]
    assert row["total_ms"] == pytest.approx(statistics.median(applied))


def test_a_case_whose_every_timed_step_was_skipped_is_nonfinite(monkeypatch, cpu_ceilings):
    monkeypatch.setattr(runner, "settle", lambda *args, **kwargs: 0)
    monkeypatch.setattr(runner.ScaleWatch, "skipped", lambda self: [True] * (len(self._marks) - 1))
    row, samples = run_case(resolve(tiny_case(mode="fp16-amp", steps=3)), cpu_ceilings)
    assert row["status"] == "nonfinite" and "skipped all 3 timed steps" in row["error"]
    assert samples == {}


def test_a_case_whose_scale_is_at_zero_never_settles_and_is_nonfinite(monkeypatch, cpu_ceilings):
    # Where a state that overflows every step ends: the scale at 0 no longer falls, and no step
    # trains. Settling says so rather than count ten steps at 0 as settled.
    built = runner.build

    def at_zero(*args, **kwargs):
        s = built(*args, **kwargs)
        s.scaler._init_scale = 0.0  # the scale GradScaler starts from at its first step
        return s

    monkeypatch.setattr(runner, "build", at_zero)
    row, samples = run_case(resolve(tiny_case(mode="fp16-amp", steps=3)), cpu_ceilings)
    assert row["status"] == "nonfinite" and "scale is 0" in row["error"], row["error"]
    assert samples == {}
