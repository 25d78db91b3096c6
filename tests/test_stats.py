import math

import pytest

from bench.measure.stats import (
    family_verdicts,
    holm,
    is_noisy,
    phase_columns,
    rounds_needed,
    summarize,
)


def test_summary_of_one_to_ten():
    # numpy's linear interpolation: p25 = 3.25, p50 = 5.5, p75 = 7.75, p10 = 1.9, p90 = 9.1
    s = summarize([float(v) for v in range(10, 0, -1)])
    assert s == pytest.approx({"median": 5.5, "iqr": 4.5, "p10": 1.9, "p90": 9.1})


def test_noisy_flag_uses_iqr_over_median():
    steady = [100.0, 101.0, 99.0, 100.5, 99.5]  # IQR 1.0 on a median of 100: 1%
    ragged = [100.0, 120.0, 80.0, 110.0, 90.0]  # IQR 20 on 100: 20%
    assert not is_noisy(steady)
    assert is_noisy(ragged)


def test_phase_columns_names():
    cols = phase_columns({"fwd": [1.0, 3.0], "total": [2.0, 4.0]})
    assert cols["fwd_ms"] == 2.0
    assert cols["total_ms"] == 3.0
    suffixes = ("", "_iqr", "_p10", "_p90")
    assert set(cols) == {f"{p}_ms{s}" for p in ("fwd", "total") for s in suffixes}


def test_empty_samples_raise():
    with pytest.raises(ValueError):
        summarize([])


def test_holm_by_hand():
    # Sorted: 0.005, 0.01, 0.03, 0.04 face 4×, 3×, 2× and 1×: 0.02, 0.03, 0.06, 0.04; each
    # adjusted p is at least the one before it (the steps stop at the first that fails), so
    # 0.04 becomes 0.06. At 5%: the two smallest are called, 0.03 and 0.04 no longer.
    assert holm([0.01, 0.04, 0.03, 0.005]).tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.6]).tolist() == [1.0, 1.0]  # 2 × 0.5, clipped at 1
    assert holm([0.01]).tolist() == [0.01]  # one test: nothing to correct
    # A test not made (NaN) stays NaN and does not count: m = 2.
    out = holm([0.02, math.nan, 0.01])
    assert out[0] == pytest.approx(0.02) and math.isnan(out[1]) and out[2] == pytest.approx(0.02)
    assert holm([]).tolist() == []


@pytest.mark.parametrize("bad", [[1.5], [-0.1], [[0.1, 0.2]]])
def test_holm_refuses_what_is_not_a_list_of_p_values(bad):
    with pytest.raises(ValueError, match="p-values"):
        holm(bad)


def test_a_family_keeps_only_the_calls_that_survive_holm():
    # Every round of B above every round of A, 5 a side: p = 2 / 252 = 0.0079 in each case. Over
    # 6 such cases Holm asks 6 × 0.0079 = 0.048 <= 5%: all stay slower; over 10, 0.079: none.
    p = 2 / 252
    for n, expected in ((6, "slower"), (10, "unclear")):
        out = family_verdicts([{"case": i, "p_value": p, "verdict": "slower"} for i in range(n)])
        assert {c["verdict"] for c in out} == {expected}
        assert out[0]["p_holm"] == pytest.approx(n * p)
        assert list(out[0]) == ["case", "p_value", "p_holm", "verdict"]
    cases = [
        {"p_value": 0.001, "verdict": "faster"},  # 4 × 0.001: called
        {"p_value": 0.02, "verdict": "slower"},  # 3 × 0.02 = 0.06: not
        {"p_value": 0.5, "verdict": "same"},  # stands
        {"p_value": math.nan, "verdict": "unclear"},  # too few rounds: not in the family
        {"p_value": 0.9, "verdict": "unclear"},
        {"verdict": "missing"},
    ]
    out = family_verdicts(cases)
    assert [c["verdict"] for c in out] == [
        "faster",
        "unclear",
        "same",
        "unclear",
        "unclear",
        "missing",
    ]
    assert [c.get("p_holm") for c in out][:3] == pytest.approx([0.004, 0.06, 1.0])
    assert "p_holm" not in out[-1] and cases[1]["verdict"] == "slower"  # inputs untouched
    # At 99% the faster call (p_holm 0.004) survives too; at 99.9% it does not.
    assert family_verdicts(cases, confidence=0.99)[0]["verdict"] == "faster"
    assert family_verdicts(cases, confidence=0.999)[0]["verdict"] == "unclear"


def test_rounds_needed_for_a_family():
    # Mann-Whitney's smallest p with n a side is 2 / C(2n, n): 0.029 (4), 0.0079 (5), 0.0022 (6),
    # 0.00058 (7). Holm asks it to be at most 5% / cases.
    assert [rounds_needed(c) for c in (1, 2, 6, 7, 23, 24, 85, 86)] == [4, 5, 5, 6, 6, 7, 7, 8]
    assert rounds_needed(10, confidence=0.99) == 7  # 1% / 10: 0.0022 is too large
    with pytest.raises(ValueError, match="cases"):
        rounds_needed(0)
