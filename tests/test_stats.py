import pytest

from bench.measure.stats import is_noisy, phase_columns, summarize


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
