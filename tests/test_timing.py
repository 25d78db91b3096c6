"""The timing discipline, checked with an injected clock."""

import pytest

from bench.timing import time_phases


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
