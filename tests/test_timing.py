"""The timing discipline, checked with an injected clock; and the unit of the CPU clock."""

import math
import time

import pytest
import torch

from bench import faults
from bench.measure import stats, timing
from bench.measure.adaptive import FIXED, StopRule
from bench.measure.timing import HostClock, clock_for, time_phases, time_windows
from bench.plan.step import ScaleWatch
from bench.verdicts import rounds


class FakeClock:
    """Time advances only when a phase says so; every call is logged in order."""

    def __init__(self):
        self.now = 0.0
        self.log: list[str] = []

    def advance(self, ms: float) -> None:
        self.now += ms

    def mark(self):
        self.log.append("mark")
        return self.now

    def finish(self):
        self.log.append("finish")

    def elapsed_ms(self, a, b):
        return b - a


def test_samples_per_phase_and_total():
    clock = FakeClock()
    calls = []
    phases = {
        "fwd": lambda: (calls.append("fwd"), clock.advance(2.0)),
        "bwd": lambda: (calls.append("bwd"), clock.advance(3.0)),
    }
    samples = time_phases(phases, warmup=2, steps=4, clock=clock)
    assert samples == {"fwd": [2.0] * 4, "bwd": [3.0] * 4, "total": [5.0] * 4}
    assert calls == ["fwd", "bwd"] * 6  # 2 warm-up + 4 timed steps


def test_one_sync_after_warmup_and_one_after_the_window():
    clock = FakeClock()
    time_phases({"a": lambda: None, "b": lambda: None}, warmup=3, steps=5, clock=clock)
    # warm-up makes no marks; then finish; then 3 marks per step; then finish once
    assert clock.log == ["finish"] + ["mark"] * 15 + ["finish"]


def test_varying_phase_times_are_kept_raw():
    clock = FakeClock()
    durations = iter([1.0, 2.0, 3.0])
    samples = time_phases(
        {"p": lambda: clock.advance(next(durations))}, warmup=0, steps=3, clock=clock
    )
    assert samples["p"] == [1.0, 2.0, 3.0]


@pytest.mark.parametrize("bad", [0, -1])
def test_bad_step_count(bad):
    with pytest.raises(ValueError, match="steps"):
        time_phases({"p": lambda: None}, warmup=0, steps=bad, clock=FakeClock())


def test_total_is_a_reserved_phase_name():
    with pytest.raises(ValueError, match="total"):
        time_phases({"total": lambda: None}, warmup=0, steps=1, clock=FakeClock())


def test_the_cpu_clock_reads_milliseconds():
    # A phase that sleeps 20 ms, timed on the clock a CPU run uses: the sample is in ms. The bounds
    # are loose (a busy machine sleeps longer); seconds (0.02) or microseconds (20000) fall outside.
    samples = time_phases(
        {"sleep": lambda: time.sleep(0.02)}, warmup=0, steps=2, clock=clock_for("cpu")
    )
    assert all(15.0 <= ms <= 200.0 for ms in samples["sleep"]), samples
    assert all(15.0 <= ms <= 200.0 for ms in samples["total"]), samples


def test_repeats_are_windows_after_one_warmup_each_closed_by_its_own_sync():
    clock = FakeClock()
    durations = iter(float(ms) for ms in range(1, 8))  # 1 warm-up step, then 2 windows of 3
    windows, why = time_windows(
        {"p": lambda: clock.advance(next(durations))},
        warmup=1,
        steps=3,
        rule=StopRule.between(2, 2),
        clock=clock,
    )
    assert why == FIXED
    assert windows == [
        {"p": [2.0, 3.0, 4.0], "total": [2.0, 3.0, 4.0]},
        {"p": [5.0, 6.0, 7.0], "total": [5.0, 6.0, 7.0]},
    ]
    # Warm-up once; each window opens on a drained device and ends with its one sync.
    window = ["finish"] + ["mark"] * 6 + ["finish"]
    assert clock.log == window + window


@pytest.mark.parametrize("bad", [0, -2, 1.5, True])
def test_bad_repeat_count(bad):
    with pytest.raises(ValueError, match="max_windows"):
        StopRule(min_windows=1, max_windows=bad)


class FakeWatch:
    """A step watch whose steps skip as `skips` says, in order."""

    def __init__(self, skips: list[bool], log: list[str] | None = None):
        self.skips = iter(skips)
        self.pending: list[bool] = []
        self.log: list[str] = [] if log is None else log  # a clock's, to see the order

    def start(self):
        self.log.append("watch start")
        self.pending = []

    def mark(self):
        self.log.append("watch")
        self.pending.append(next(self.skips))

    def skipped(self):
        out, self.pending = self.pending, []
        return out

    def stuck(self):
        return None


def test_a_skipped_step_is_no_sample_of_any_phase():
    clock = FakeClock()
    phases = {"fwd": lambda: clock.advance(2.0), "step": lambda: clock.advance(1.0)}
    watch = FakeWatch([False, True, False, True], log=clock.log)
    samples = time_phases(phases, warmup=0, steps=4, clock=clock, watch=watch)
    for values in samples.values():
        assert [math.isnan(v) for v in values] == [False, True, False, True]
    assert samples["total"][0] == 3.0 and samples["fwd"][2] == 2.0
    # The watch marks before the first step and after each step's last clock mark, before the
    # next step's first: outside every timed region, and nothing waits inside the window.
    step = ["mark", "mark", "mark", "watch"]
    assert clock.log == ["finish", "watch start", *step * 4, "finish"]


def test_statistics_are_over_the_training_steps_alone():
    samples = [1.0, math.nan, 3.0, math.nan, 2.0]
    assert stats.summarize(samples)["median"] == 2.0
    assert rounds.of_round(samples, "p10") == pytest.approx(1.2)
    assert stats.phase_columns({"total": samples})["total_ms_p10"] == pytest.approx(1.2)
    with pytest.raises(ValueError, match="no training step"):
        rounds.of_round([math.nan, math.nan])


def test_settle_runs_until_enough_steps_in_a_row_applied():
    clock, ran = FakeClock(), []
    skips = [True, True, False, True] + [False] * 20
    steps = timing.settle({"a": lambda: ran.append(1)}, FakeWatch(skips), clock, quiet=5, cap=50)
    assert steps == 4 + 5 == len(ran)  # the fourth skipped, then five applied in a row
    capped = timing.settle({"a": lambda: None}, FakeWatch([True] * 9), clock, quiet=5, cap=9)
    assert capped == 9


def test_a_window_of_skipped_steps_has_no_training_step_to_time():
    clock = FakeClock()
    phases = {"a": lambda: clock.advance(1.0)}
    settled = FakeWatch([False] * 10 + [True] * 3)  # settles, then every timed step skips
    with pytest.raises(timing.NoTrainingStep, match="skipped all 3 timed steps"):
        timing.time_settled(phases, warmup=0, steps=3, clock=clock, watch=settled)
    samples = timing.time_settled(phases, warmup=0, steps=3, clock=clock, watch=None)
    assert samples["total"] == [1.0] * 3


def test_a_scale_backed_off_to_zero_never_settles():
    """A real GradScaler on a state that overflows every step: its scale halves down to 0 and
    stays there, no longer falling. That is no settled scale but a state that trains no more:
    settling raises, and the case is `nonfinite`."""
    weight = torch.nn.Parameter(torch.ones(4))
    opt = torch.optim.SGD([weight], lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**-140)

    def overflowing_step() -> None:
        opt.zero_grad()
        scaler.scale((weight * math.inf).sum()).backward()
        scaler.step(opt)
        scaler.update()

    with pytest.raises(timing.NoTrainingStep, match="scale is 0"):
        timing.settle({"step": overflowing_step}, ScaleWatch(scaler), HostClock(), quiet=5)
    assert scaler.get_scale() == 0.0
    assert faults.fault_status(timing.NoTrainingStep("")) == "nonfinite"
