"""A table kept as `.npz` (`bench.store.frames`) reads back as `frames.read_csv` reads its CSV,
exactly and in order."""

import io
import math
import warnings

import numpy as np
import pandas as pd
import pytest

from bench.store import frames


def _table(n: int = 300) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    modules = ["fc1.weight", "fc1.bias", "fc2.weight"]
    return pd.DataFrame(
        {
            "mode": np.repeat(["fp32", "bf16-amp"], n // 2),
            "step": np.arange(n) // len(modules),
            "module": [modules[i % len(modules)] for i in range(n)],
            "loss": rng.random(n).astype(np.float32).astype(float),  # float32 measurements
            "exact64": rng.random(n),  # float64 values float32 cannot hold
            "scale": [65536.0 if i % 4 else math.nan for i in range(n)],
            "skipped": rng.random(n) < 0.1,
            "note": [None if i % 5 else "x" for i in range(n)],
        }
    )


def _as_csv_reads_it(df: pd.DataFrame) -> pd.DataFrame:
    return frames.read_csv(io.StringIO(df.to_csv(index=False)))


@pytest.mark.parametrize("n", [0, 2, 300])
def test_a_table_reads_back_as_its_csv_does(tmp_path, n):
    df = _as_csv_reads_it(_table(n)) if n else pd.DataFrame(columns=["a", "b"])
    frames.write(df, tmp_path / "t.npz")
    back = frames.read(tmp_path / "t.npz")
    assert list(back.columns) == list(df.columns) and len(back) == len(df)
    if n:
        pd.testing.assert_frame_equal(back, df, check_exact=True)  # order, dtypes, NaN, text


def test_float32_is_kept_only_where_it_is_exact(tmp_path):
    df = _as_csv_reads_it(_table())
    frames.write(df, tmp_path / "t.npz")
    with np.load(tmp_path / "t.npz") as npz:
        kinds = {k.split(".")[1] for k in npz.files if k.split(".")[0] in ("3", "4")}
    assert kinds == {"float32", "float64"}  # loss narrow, exact64 whole


def test_the_same_rows_make_the_same_bytes(tmp_path):
    df = _as_csv_reads_it(_table())
    frames.write(df, tmp_path / "a.npz")
    frames.write(df, tmp_path / "b.npz")
    assert (tmp_path / "a.npz").read_bytes() == (tmp_path / "b.npz").read_bytes()


def test_csv_floats_read_back_exactly_without_a_deprecated_option():
    # The default parser of pandas 2.x and 3.0.x reads these one ulp off; no pandas warns.
    values = [2.2411623001098637, *np.random.default_rng(0).random(2000)]
    text = pd.DataFrame({"x": values}).to_csv(index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        back = frames.read_csv(io.StringIO(text))["x"].tolist()
    assert back == values


@pytest.mark.parametrize(
    ("version", "option"),
    [("2.0.0", "round_trip"), ("2.3.3", "round_trip"), ("3.0.6", "round_trip"),
     ("3.1.0rc0", None), ("3.1.1", None), ("4.0.0.dev0+1.gabc", None)],
)  # fmt: skip
def test_round_trip_is_asked_for_where_the_default_is_not_exact(version, option):
    assert frames._exact_floats(version).get("float_precision") == option
