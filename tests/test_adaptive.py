"""When a case's timing stops (`bench.measure.adaptive`), driven by made-up samples and an
injected clock: early on narrow windows, at the cap on wide ones, never below the minimum, and
the row says how many windows it has."""

import pytest

from bench.measure import adaptive, runner, timing
from bench.measure.adaptive import StopRule
from bench.plan.plan import resolve
from bench.publish import method, report
from tests.conftest import tiny_case
from tests.test_timing import FakeClock


def _window(median: float, spread: float = 0.001, steps: int = 20) -> list[float]:
    """`steps` step times around `median`, each within +-`spread` of it (a share)."""
    return [median * (1 + spread * ((i % 5) - 2) / 2) for i in range(steps)]


def _stops(rule: StopRule, windows: list[list[float]]) -> tuple[int, str]:
    """After how many of `windows` the rule stops, and why (as `time_windows` asks it)."""
    for n in range(1, len(windows) + 1):
        why = rule.stop(windows[:n])
        if why is not None:
            return n, why
    raise AssertionError("the rule never stopped")


def test_narrow_windows_stop_at_the_minimum():
    rule = StopRule(min_windows=2, max_windows=5)
    assert _stops(rule, [_window(10.0), _window(10.02), _window(10.0)]) == (2, adaptive.NARROW)


def test_wide_windows_run_to_the_cap():
    rule = StopRule(min_windows=2, max_windows=4)
    # Medians 10, 10.5, 11, 11.5: never within 1% of each other.
    windows = [_window(10.0 + 0.5 * i) for i in range(4)]
    assert _stops(rule, windows) == (4, adaptive.WINDOW_CAP)


def test_noisy_steps_are_not_narrow_though_the_medians_agree():
    rule = StopRule(min_windows=2, max_windows=3)
    noisy = [_window(10.0, spread=0.4)] * 3  # equal medians, IQR about 20% of the median
    assert _stops(rule, noisy) == (3, adaptive.WINDOW_CAP)


def test_never_below_the_minimum():
    rule = StopRule(min_windows=3, max_windows=5)
    narrow = [_window(10.0)] * 5
    assert rule.stop(narrow[:1]) is None and rule.stop(narrow[:2]) is None
    assert _stops(rule, narrow) == (3, adaptive.NARROW)


def test_a_count_asked_for_is_fixed():
    rule = StopRule.between(3, 3)
    wide = [_window(10.0 + i) for i in range(3)]
    assert _stops(rule, wide) == (3, adaptive.FIXED)
    # No minimum (a case or folder before adaptive windows): exactly the count.
    assert StopRule.between(0, 4) == StopRule(min_windows=4, max_windows=4)
    assert StopRule.between(2, 3) == StopRule(min_windows=2, max_windows=3)


def test_the_time_cap_stops_a_slow_wide_case_after_the_minimum():
    rule = StopRule(min_windows=2, max_windows=5, max_timed_s=4.0)
    # 150 ms steps, 20 a window: 3 s a window, so 6 s after two.
    slow = [_window(150.0 + 10 * i) for i in range(5)]
    assert _stops(rule, slow) == (2, adaptive.TIME_CAP)
    fast = [_window(1.0 + 0.1 * i) for i in range(5)]
    assert _stops(rule, fast) == (5, adaptive.WINDOW_CAP)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"min_windows": 3, "max_windows": 2}, "min_windows 3 is above max_windows 2"),
        ({"min_windows": 0, "max_windows": 2}, "min_windows must be a positive integer, got 0"),
        ({"max_windows": True}, "max_windows must be a positive integer, got True"),
        ({"max_windows": 3, "max_spread": 0.0}, "max_spread must be positive, got 0.0"),
    ],
)
def test_bad_bounds_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        StopRule(**kwargs)


def test_time_windows_stops_by_the_rule_and_keeps_one_sync_per_window(monkeypatch):
    clock = FakeClock()
    medians = iter([10.0, 10.0, 12.0])  # every step of a window takes that window's median
    current = [next(medians)]
    real = timing.time_phases

    def then_next(phases, **kwargs):
        out = real(phases, **kwargs)
        current[0] = next(medians)
        return out

    monkeypatch.setattr(timing, "time_phases", then_next)
    windows, why = timing.time_windows(
        {"a": lambda: clock.advance(current[0])},
        warmup=2,
        steps=4,
        rule=StopRule(min_windows=2, max_windows=3),
        clock=clock,
    )
    # 10 and 10 agree: stopped at the minimum, the 12 ms window never ran.
    assert (len(windows), why) == (2, adaptive.NARROW)
    assert [w["total"] for w in windows] == [[10.0] * 4, [10.0] * 4]
    # Warm-up before the first window only; one drain and one sync per window, none inside.
    assert clock.log == (["finish"] + ["mark"] * 8 + ["finish"]) * 2


def _scripted_clock(monkeypatch, window_ms: list[float]) -> None:
    """The runner's clock gives every step of window i the time window_ms[i] (the steps still
    run for real on the CPU; their losses are checked)."""
    state = {"window": 0, "calls": 0}

    class Clock(FakeClock):
        def finish(self):
            # The finish that closes a window (every second one: drain, then close) moves on.
            state["calls"] += 1
            if state["calls"] % 2 == 0:
                state["window"] += 1

        def mark(self):
            self.now += window_ms[min(state["window"], len(window_ms) - 1)]
            return self.now

    monkeypatch.setattr(runner, "clock_for", lambda device: Clock())


def test_a_row_stopped_early_says_how_many_windows_it_has(monkeypatch, cpu_ceilings):
    _scripted_clock(monkeypatch, [5.0, 5.0, 9.0])
    row, samples = runner.run_case(
        resolve(tiny_case(steps=3, repeats=3, min_repeats=2)), cpu_ceilings
    )
    assert row["status"] == "ok", row["error"]
    assert (row["windows"], row["windows_stop"]) == (2, adaptive.NARROW)
    assert len(samples["total"]) == 2 * 3 == row["windows"] * row["steps"]


def test_a_row_run_to_the_cap_says_so(monkeypatch, cpu_ceilings):
    _scripted_clock(monkeypatch, [5.0, 6.0, 7.0])
    row, samples = runner.run_case(
        resolve(tiny_case(steps=3, repeats=3, min_repeats=2)), cpu_ceilings
    )
    assert (row["windows"], row["windows_stop"]) == (3, adaptive.WINDOW_CAP)
    assert len(samples["total"]) == 9


def test_the_report_shows_the_windows_and_why():
    import pandas as pd

    df = pd.DataFrame(
        {
            "windows": [2, 2, 3, 3],
            "windows_stop": ["narrow", "narrow", "window cap", "fixed"],
        }
    )
    (line,) = [s for s in method.windows_line(df) if s]
    assert "2 after 2 (narrow), 1 after 3 (fixed), 1 after 3 (window cap)" in line
    assert method.windows_line(df.drop(columns=["windows"])) == []  # a folder before them
    assert report.columns.TIME["windows"] == "windows"


def test_the_report_says_how_gradscalers_skipped_steps_were_kept_out():
    import pandas as pd

    df = pd.DataFrame(
        {
            "status": ["ok", "ok", "ok", "error"],
            "scale_loss": [True, True, False, True],
            "scale_warmup_steps": [14, 11, 0, 90],
            "skipped_steps": [0, 2, 0, 7],
        }
    )
    (line,) = [s for s in method.skipped_line(df) if s]
    assert "14" in line and "11–14 steps" in line and "90" not in line  # ok, scaled rows only
    assert "2 timed steps in 1 of 2 cases" in line
    settled = df.assign(skipped_steps=0)
    assert "no timed step of the 2 cases" in method.skipped_line(settled)[0]
    assert method.skipped_line(df.drop(columns=["skipped_steps"])) == []  # an older folder


def test_the_warm_up_stops_at_its_time_budget_and_times_nothing():
    clock = FakeClock()
    calls = []

    def step():
        calls.append(1)
        clock.advance(30.0)

    samples = timing.time_phases({"a": step}, warmup=5, steps=2, clock=clock, warmup_ms=50.0)
    # 30 ms, then 60 ms >= 50: two warm-up steps of the five, then the two timed ones.
    assert len(calls) == 4 and samples["total"] == [30.0, 30.0]
    # Waiting on the warm-up happens before the drain; the window keeps its one sync.
    assert clock.log == ["mark", "mark", "finish", "mark", "finish", "finish"] + [
        "mark",
        "mark",
    ] * 2 + ["finish"]
    # Short steps get every warm-up step; no budget, no waiting at all.
    fast = FakeClock()
    count = timing.warm_up({"a": lambda: fast.advance(1.0)}, 5, fast, budget_ms=50.0)
    assert count == 5
    plain = FakeClock()
    assert timing.warm_up({"a": lambda: None}, 3, plain) == 3 and plain.log == []


def test_the_fewest_windows_is_one_number_the_rule_a_new_run_and_the_report_share(monkeypatch):
    import ast
    from pathlib import Path

    import pandas as pd

    from bench.cases import grid
    from bench.jobs.configs import run_config

    # The stopping rule's floor and a new run's --min-repeats are the one constant ...
    assert StopRule(max_windows=9).min_windows == grid.DEFAULT_MIN_REPEATS == 2
    assert run_config(device="cpu", preset=None).min_repeats == grid.DEFAULT_MIN_REPEATS
    # ... which the report reads where it prints it, not a number of its own ...
    monkeypatch.setattr(grid, "DEFAULT_MIN_REPEATS", 7)
    df = pd.DataFrame({"windows": [3], "windows_stop": ["narrow"]})
    (line,) = [s for s in method.windows_line(df) if s]
    assert "from 7 windows up to --repeats" in line
    # ... and no other module of bench writes the number down again.
    bench = Path(__file__).resolve().parent.parent / "bench"
    written = [
        (str(path.relative_to(bench)), target.id)
        for path in bench.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name) and target.id.endswith(("MIN_WINDOWS", "MIN_REPEATS"))
    ]
    assert written == [("cases/grid.py", "DEFAULT_MIN_REPEATS")]
