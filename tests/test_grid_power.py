"""The rounds judge on rounds bootstrapped from real H200 rounds (`bench.verdicts.power`): the
false calls it makes when nothing changed, the real 3% changes it finds, at a fixed number of
rounds (`compare`) and with `ab`'s stopping rule. The fixture holds each case of the default
grid's committed runs (062f3e4, one window a case; e5180fb, three) as the median total step
time of each window, as `python -m bench.verdicts.grid_power` extracts it; the full study, with
more comparisons, is results/grid-power/README.md."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bench.verdicts import power
from bench.verdicts.defaults import CONFIDENCE
from bench.verdicts.grid_power import QUIET, cases_of, extract
from bench.verdicts.rounds import MIN_ROUNDS, PRIOR_ROUNDS
from tests.stored import timing_row, write_run

FIXTURE = Path(__file__).parent / "fixtures" / "h200_rounds.csv"
RATE = 1 - CONFIDENCE
"""The stated rate: the chance of any false faster or slower call in one comparison."""


@pytest.fixture(scope="module")
def grid() -> list[power.Case]:
    cases = cases_of(pd.read_csv(FIXTURE))
    assert len(cases) == 156  # the default grid
    return cases


def _false_calls(cases, rounds, comparisons, seed) -> float:
    rng = np.random.default_rng(seed)
    none = [0.0] * len(cases)
    runs = [
        power.one_comparison(cases, none, rng, rounds_a_side=rounds) for _ in range(comparisons)
    ]
    return power.rates(runs, none)["any_false"]


def _allowed(comparisons: int) -> float:
    """The stated rate, and two standard errors of a rate measured on so few comparisons."""
    return RATE + 2 * (RATE * (1 - RATE) / comparisons) ** 0.5


def test_same_code_on_the_whole_grid_calls_nothing_beyond_the_stated_rate(grid):
    """A/A, 100 comparisons of the 156 cases at the judge's fewest rounds (2 a side): false
    calls in no more of them than the stated 5% (within the simulation's own error; the study
    measures the rate on 300, results/grid-power/README.md)."""
    assert _false_calls(grid, MIN_ROUNDS, 100, seed=5) <= _allowed(100)


def test_five_rounds_a_side_find_most_three_percent_changes(grid):
    """The shifts of `power.SHIFTS` in turn, 5 rounds a side, 6 comparisons: the ±3% changes
    are called in most cases, and in nearly all of the cases whose real windows scatter by less
    than 1% (the others scatter as far as the change itself: docs/comparing.md)."""
    rng = np.random.default_rng(3)
    shifts = [power.SHIFTS[i % len(power.SHIFTS)] for i in range(len(grid))]
    runs = [power.one_comparison(grid, shifts, rng, rounds_a_side=5) for _ in range(6)]
    every = power.rates(runs, shifts)
    quiet = power.rates(runs, shifts, [power.spread(c) < QUIET for c in grid])
    assert every["any_false"] <= RATE * 6  # no false call in 6 comparisons, or one
    assert min(every["called_+3.0%"], every["called_-3.0%"]) >= 0.6, every
    assert min(quiet["called_+3.0%"], quiet["called_-3.0%"]) >= 0.85, quiet
    assert every["called_+0.5%"] <= 0.01  # a change below the smallest effect is not called


@pytest.fixture(scope="module")
def modes(grid) -> list[power.Case]:
    """Three modes of the grid, quiet and noisy cases among them: a comparison `ab` makes."""
    return [c for c in grid if c.group in ("fp32", "bf16-amp", "fp8-rowwise")]


def test_the_stopping_rule_keeps_the_stated_rate(modes):
    """`ab`'s rule (looks from `PRIOR_ROUNDS` a side to 7, each at alpha over the 3 looks), A/A,
    60 comparisons of 54 cases: false calls in no more than the stated 5% of them."""
    rng = np.random.default_rng(11)
    none = [0.0] * len(modes)
    runs = [power.sequential(modes, none, rng, least=PRIOR_ROUNDS, most=7) for _ in range(60)]
    assert power.rates([words for words, _ in runs], none)["any_false"] <= _allowed(60)


def test_the_stopping_rule_finds_what_the_cap_finds_and_stops_early_where_it_can(modes):
    """A real 3% shift of every case: the rule calls as many as 7 rounds a side judged once; on
    the cases that scatter by less than 1% it stops before the cap."""
    rng = np.random.default_rng(12)
    shifted = [0.03] * len(modes)
    stopping = [power.sequential(modes, shifted, rng, least=PRIOR_ROUNDS, most=7) for _ in range(6)]
    fixed = [power.one_comparison(modes, shifted, rng, rounds_a_side=7) for _ in range(6)]
    by_rule = power.rates([words for words, _ in stopping], shifted)["called_+3.0%"]
    by_cap = power.rates(fixed, shifted)["called_+3.0%"]
    assert by_rule >= by_cap - 0.03, (by_rule, by_cap)
    quiet = [c for c in modes if power.spread(c) < QUIET]
    rounds = [
        power.sequential(quiet, [0.03] * len(quiet), rng, least=PRIOR_ROUNDS, most=7)[1]
        for _ in range(6)
    ]
    assert np.mean(rounds) < 7, rounds


@pytest.mark.parametrize(("steps", "windows"), [(10, 2), (5, 4), (20, 1)])
def test_a_window_is_as_many_steps_as_the_folder_says(tmp_path, steps, windows):
    # write_run's 20 samples a case are its windows back to back; the row's `steps` is one's.
    run = write_run(tmp_path / "run", [timing_row(steps=steps)])
    table = extract([run])
    assert sorted(table["window"]) == list(range(windows))
