"""The looks' split of alpha (`bench.verdicts.rounds`, `bench.jobs.ab_looks`): at a look of `ab`'s
stopping rule a case is called only where its p-value is at most alpha ÷ looks, so a p-value
between alpha ÷ looks and alpha stays `unclear` at every look. Fixtures built here."""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from bench.jobs import ab_looks
from bench.verdicts.rounds import judge_family, rounds_verdict

A = [10.0, 10.4, 9.6, 10.2, 9.8]
B = [10.3, 9.7, 10.0, 10.25, 9.75]


def _slower(by: float) -> list[float]:
    return [v * by for v in B]


def test_a_case_between_alpha_over_looks_and_alpha_is_unclear_at_a_later_look():
    # Noise off (noise_k 0): only the p-value and the smallest effect decide. Five rounds a side,
    # B 5% slower: p is 0.03, under alpha (5%) but over its share at either of two looks (2.5%).
    b = _slower(1.05)
    one = rounds_verdict(A, b, noise_k=0.0)
    assert 0.025 < one["p_value"] < 0.05 and one["verdict"] == "slower"
    two = rounds_verdict(A, b, noise_k=0.0, looks=2)
    assert two["p_value"] == pytest.approx(one["p_value"]) and two["verdict"] == "unclear"
    # The interval is the look's: wider at 97.5% than at 95%.
    assert two["ratio_lo"] < one["ratio_lo"] and two["ratio_hi"] > one["ratio_hi"]


def test_the_family_judge_splits_alpha_over_the_looks_too():
    # B 7% slower, past the noise bar (2 × the rounds' SD of logs, 5.9%): p is 0.007, called at
    # one look (5%) and not at ten (0.5% each).
    b = _slower(1.07)
    alone = judge_family([("m", A, b)])[0]
    assert 0.005 < alone["p_value"] < 0.05 and alone["verdict"] == "slower"
    assert judge_family([("m", A, b)], looks=10)[0]["verdict"] == "unclear"


def test_abs_look_judges_with_its_share_of_alpha(monkeypatch):
    # A look of `ab`'s stopping rule on rounds whose medians are A and B 7% slower: decided with
    # one look, still unclear when the comparison looks ten times.
    rounds = [("m", [np.full(3, v) for v in A], [np.full(3, v) for v in _slower(1.07)])]
    monkeypatch.setattr(ab_looks, "rounds_so_far", lambda folder, done: rounds)
    done = [{"side": s, "folder": f"{s}{i}"} for i in range(5) for s in "AB"]

    def look(looks: int) -> dict:
        cfg = SimpleNamespace(statistic="median", min_effect=0.02, confidence=0.95, looks=looks)
        return ab_looks.look(Path("unused"), done, cfg)

    assert look(1)["verdicts"] == {"slower": 1} and look(1)["decided"]
    later = look(10)
    assert later["verdicts"] == {"unclear": 1} and not later["decided"]
    assert (later["rounds_a"], later["rounds_b"]) == (5, 5)
