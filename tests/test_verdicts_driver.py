"""The sweep's speed rule (`bench.verdicts.driver`, `bench.verdicts.many_to_one.against_reference`):
one observation per run, a t-test on the mean of log run medians with the spread pooled over
the modes, Holm's correction over the modes, alpha spent over the timed looks. Simulated sweeps
(`bench.verdicts.power.speed_sessions`, vectorised, fixed RNG seeds) at the between-run spread
of real runs (`driver.BETWEEN_RUN_SD`) and below it: A/A sessions and real speed-ups."""

from __future__ import annotations

import numpy as np
import pytest

from bench.ownloop.config import SweepConfig, default_modes
from bench.verdicts import driver, many_to_one, power

GPU_MODES = default_modes("cuda")  # fp32 and three modes judged against it, one family
SESSIONS = 4000  # a rate of 5% is known to about ±0.35% (one SD)


def _false_calls(
    sd: float, plan: driver.SpeedPlan, modes: int, seed: int, sessions: int = SESSIONS
) -> float:
    got = power.speed_sessions(
        [1.0] * modes, sd, plan, np.random.default_rng(seed), sessions=sessions
    )
    return float(np.isin(got["verdict"], (-1.0, 1.0)).any(axis=1).mean())


def _default_plan() -> driver.SpeedPlan:
    """The timed looks of a sweep at the default seeds with a budget (its cap: 8 seeds)."""
    return SweepConfig(script=("x",), modes=GPU_MODES, budget_s=600.0).speed_plan()


def test_the_default_sweep_times_its_seeds_alone_in_looks_up_to_its_cap():
    assert GPU_MODES[0] == "fp32" and len(GPU_MODES) == 4
    plan = _default_plan()
    assert (plan.first, plan.most) == (3, 8)  # 3 seeds alone, then one more a look, to 8
    levels = plan.levels(plan.looks)
    assert len(levels) == plan.looks and sum(levels) == pytest.approx(0.05)
    assert levels[0] == pytest.approx(0.05 * np.log(1 + (np.e - 1) * 3 / 8))
    assert levels[0] == max(levels)  # Pocock's function spends most at the first look
    # Without looks: one look, all of alpha.
    one = SweepConfig(script=("x",), modes=GPU_MODES).speed_plan().levels(1)
    assert one == pytest.approx((0.05,))


@pytest.mark.parametrize("sd", [0.02, 0.05, driver.BETWEEN_RUN_SD])
def test_a_a_sessions_make_at_most_5_percent_false_calls_over_modes_and_looks(sd):
    # One look, the default plan's looks (3 to 8 runs alone), and looks from 2 runs to 10; the
    # GPU's three modes against fp32, and one mode alone (no Holm to spare it). One look of one
    # mode is Student's t at exactly 5%: its bound allows the simulation's error (3 SEs); over
    # looks, the spending's Bonferroni bound leaves room enough for 5% itself.
    exact = 0.05 + 3 * np.sqrt(0.05 * 0.95 / SESSIONS)
    for k, plan in enumerate((driver.SpeedPlan(3, 3), _default_plan(), driver.SpeedPlan(2, 10))):
        for modes in (len(GPU_MODES) - 1, 1):
            rate = _false_calls(sd, plan, modes, seed=100 * k + modes)
            assert rate <= (exact if plan.looks == 1 else 0.05), (sd, plan, modes, rate)


def test_the_recursion_of_the_training_rule_would_let_t_statistics_through():
    # The levels it replaces here: the exact recursion for normal statistics, applied to the t
    # statistics of a few runs, makes more than 5% false calls for one mode: the reason the
    # speed rule spends by Bonferroni's inequality (`SpeedPlan.levels`) instead.
    class Recursion(driver.SpeedPlan):
        def levels(self, taken):
            from bench.verdicts import sequential

            fractions = tuple(self.runs_at(k) / self.most for k in range(1, taken + 1))
            return tuple(2 * x for x in sequential.levels(fractions, 0.025))

    assert _false_calls(0.05, Recursion(2, 10), 1, seed=7, sessions=12000) > 0.05
    assert _false_calls(0.05, driver.SpeedPlan(2, 10), 1, seed=7, sessions=12000) <= 0.05


def test_a_real_1_2x_speed_up_at_9_percent_is_called_within_10_runs_a_side():
    rng = np.random.default_rng(12)
    got = power.speed_sessions([1.0, 1.0, 1.2], 0.09, driver.SpeedPlan(3, 10), rng, sessions=4000)
    called = got["verdict"][:, 2] == -1.0
    assert called.mean() >= 0.8 and got["runs"][called, 2].max() <= 10
    # The others (no speed-up) are never called faster or slower more than the family allows.
    assert np.isin(got["verdict"][:, :2], (-1.0, 1.0)).any(axis=1).mean() <= 0.05


def test_a_1_7x_effect_at_3_percent_is_decided_with_2_runs_a_side():
    rng = np.random.default_rng(13)
    got = power.speed_sessions([1.7, 1.0, 1.0], 0.03, driver.SpeedPlan(2, 10), rng, sessions=2000)
    first = got["runs"][:, 0] == 2
    assert ((got["verdict"][:, 0] == -1.0) & first).mean() >= 0.95


def test_the_first_look_at_the_default_seeds_decides_1_3x_at_5_percent():
    rng = np.random.default_rng(14)
    plan = _default_plan()
    got = power.speed_sessions([1.3, 1.3, 1.3], 0.05, plan, rng, sessions=2000)
    at_first = (got["verdict"] == -1.0) & (got["runs"] == plan.first)
    assert at_first.all(axis=1).mean() >= 0.9


def test_power_grows_with_runs():
    # The old rule's floor (twice one run's spread) made power fall as runs were added; the
    # test on the mean's standard error gains with every run.
    rng = np.random.default_rng(15)
    called = []
    for n in (3, 5, 10, 20):
        got = power.speed_sessions([1.2], 0.09, driver.SpeedPlan(n, n), rng, sessions=2000)
        called.append(float((got["verdict"][:, 0] == -1.0).mean()))
    assert called == sorted(called) and called[-1] >= 0.99


def test_a_run_is_one_observation_and_too_few_runs_say_how_many():
    runs = {"fp32": [[10.0, 10.2, 9.8], [11.0, 11.1]], "bf16-amp": [[5.0, 5.2, 4.8], [5.5]]}
    v = driver.speed(runs, "fp32")
    assert v["fp32"] == {"verdict": "reference"}
    assert v["bf16-amp"]["rounds_a"] == v["bf16-amp"]["rounds_b"] == 2  # runs, not steps
    assert v["bf16-amp"]["ratio"] == pytest.approx(np.sqrt(5.0 * 5.5 / (10.0 * 11.05)))
    one = driver.speed({"fp32": runs["fp32"][:1], "bf16-amp": runs["bf16-amp"]}, "fp32")
    assert one["bf16-amp"]["verdict"] == "unclear" and one["bf16-amp"]["too_few"]
    assert f"needs {driver.MIN_RUNS} of each" in one["bf16-amp"]["why"]
    assert driver.speed({"fp32": [], "bf16-amp": [[5.0]]}, "fp32")["bf16-amp"]["verdict"] == (
        driver.NOT_KNOWN
    )


def test_the_pooled_spread_by_hand():
    # Logs: fp32 0, 0.02 (mean 0.01); x -0.5, -0.48 (mean -0.49); y 0.0, 0.04 (mean 0.02).
    # Each mode's squared deviations: 2e-4, 2e-4, 8e-4; pooled over 3 df: 4e-4. x against
    # fp32 alone: 4e-4 / 2 = 2e-4, below the pooled, so the pooled stands: se = 0.02, t = 25.
    # y against fp32 alone: 1e-3 / 2 = 5e-4, above it: se = sqrt(5e-4), t = 0.447; df 3.
    logs = np.log([[[1.0, np.exp(0.02)], [np.exp(-0.5), np.exp(-0.48)], [1.0, np.exp(0.04)]]])
    got = many_to_one.against_reference(logs, level=0.05, min_rounds=2)
    assert got["df"][0].tolist() == [3.0, 3.0]
    assert got["sd"][0] == pytest.approx([0.02, np.sqrt(5e-4)])
    from scipy import stats

    assert got["p"][0] == pytest.approx([2 * stats.t.sf(25, 3), 2 * stats.t.sf(0.01 / 0.0224, 3)],
                                        rel=1e-2)  # fmt: skip
    assert [many_to_one.WORDS.get(c, "unclear") for c in got["verdict"][0]] == ["faster", "unclear"]


def test_the_verdict_over_looks_is_the_first_look_that_decides():
    # Run medians (ms): bf16-amp half of fp32's from the first look; tf32's first two runs far
    # apart (11 and 9), its later ones at fp32's: unclear at every look, with the runs it needs.
    def runs_at(*medians):
        return [[m, m, m] for m in medians]

    runs = {"fp32": runs_at(10.0, 10.05, 9.95, 10.0), "bf16-amp": runs_at(5.0, 5.02),
            "tf32": runs_at(11.0, 9.0, 10.0, 10.0)}  # fmt: skip
    looks_of = {"fp32": [1, 1, 2, 3], "bf16-amp": [1, 1], "tf32": [1, 1, 2, 3]}
    got = driver.speed_over_looks(runs, looks_of, "fp32", driver.SpeedPlan(2, 4))
    assert got["bf16-amp"]["verdict"] == "faster" and got["bf16-amp"]["look"] == 1
    assert got["tf32"]["verdict"] == "unclear" and got["tf32"]["look"] == got["tf32"]["looks"] == 3
    assert got["tf32"]["needed"] > 4
    assert got["tf32"]["level"] == pytest.approx(driver.SpeedPlan(2, 4).levels(3)[2])
    assert driver.undecided(got) == ["tf32"]


def test_a_runs_observation_leaves_gradscalers_skipped_steps_out():
    nan = float("nan")
    verdicts = driver.speed({"fp32": [[10.0, nan, 12.0, nan, 11.0]] * 5, "x": [[5.5]] * 5}, "fp32")
    assert verdicts["x"]["median_ms_a"] == 11.0 and verdicts["x"]["ratio"] == pytest.approx(0.5)
    # A run with no training step is no observation.
    verdicts = driver.speed({"fp32": [[nan], [10.0]], "bf16-amp": [[5.0]]}, "fp32")
    assert "1 runs of bf16-amp and 1 of fp32" in verdicts["bf16-amp"]["why"]
