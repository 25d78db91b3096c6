"""Readable table cells: at most 4 significant digits, `–` for what was not measured."""

import math

import pandas as pd
import pytest

from bench.text import tables


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (12.636112213134766, "12.64"),
        (296214.7, "296200"),
        (0.0193, "0.01930"),
        (9.99996, "10.00"),
        (1.0, "1.000"),
        (123.456, "123.5"),
        (1.2346e-7, "1.235e-07"),
        (-0.0312, "-0.03120"),
        (0.0, "0"),
        (4096, "4096"),
        # Whole numbers print exactly: a loss scale is a power of two, not a measurement.
        (65536.0, "65536"),
        (131072.0, "131072"),
        (12000.0, "12000"),
        (16384000.0, "16384000"),
        (65536.5, "65540"),
        (2.0**60, "1153000000000000000"),  # past 2**53 a float is whole anyway
        (True, "yes"),
        (None, "–"),
        (math.nan, "–"),
        ("float32", "float32"),
    ],
)
def test_a_cell_has_at_most_four_significant_digits(value, text):
    assert tables.cell(value) == text


def test_a_table_has_no_nan_and_no_long_number():
    df = pd.DataFrame({"mode": ["fp32", "bf16-amp"], "ms": [12.636112213134766, math.nan]})
    md = tables.markdown(df)
    assert "12.64" in md and "12.636" not in md
    assert "nan" not in md and "–" in md
    # Numbers stay right-aligned, text left-aligned.
    assert md.splitlines()[1].startswith("|:") and md.splitlines()[1].endswith(":|")


def test_the_loss_scale_shows_exactly_in_a_table():
    # A column with a missing cell is float: 65536 must not read as 65540.
    df = pd.DataFrame({"loss_scale": [65536.0, math.nan], "share": [0.123456, 65536.5]})
    md = tables.markdown(df)
    assert "65536 " in md and "65540" in md and "0.1235" in md
