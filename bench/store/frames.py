"""A table too large for CSV text in git, kept as an LZMA-compressed numpy `.npz` and read back
exactly as `pandas.read_csv` would give it (floats as float32 where exact, text as codes into
distinct values, rows grouped and bytes split into planes so they compress). Needs no torch."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd

COLUMNS, ORDER = "columns", "order"
"""The arrays that hold the column names and the stored rows' order."""
FIXED_TIME = (1980, 1, 1, 0, 0, 0)
"""Every member's time in the zip: the earliest a zip can hold, so that a file depends only on
its rows."""


def _exact_floats(version: str) -> dict[str, str]:
    """The `read_csv` option that reads every float exactly in this pandas `version`. Before
    3.1 the default float parser (the C engine's "high") reads some of the shortest decimals
    `to_csv` writes one ulp off (2.2411623001098637 as 2.241162300109864), on 2.x and 3.0.x
    alike; "round_trip" parses them with Python's own converter. From 3.1 every float_precision
    is that exact converter, and passing the option is deprecated."""
    major, minor = (int(n) for n in version.split(".")[:2])  # "3.1.0rc0" is 3.1
    return {"float_precision": "round_trip"} if (major, minor) < (3, 1) else {}


_EXACT_FLOATS = _exact_floats(pd.__version__)


def read_csv(path: Path | io.StringIO) -> pd.DataFrame:
    """`pandas.read_csv`, every float read back as the float that was written, on every pandas
    2.x and 3.x: a table rewritten from its CSV keeps its values."""
    return pd.read_csv(path, **_EXACT_FLOATS)  # type: ignore[call-overload]


def _is_text(col: pd.Series) -> bool:
    return not (pd.api.types.is_bool_dtype(col) or pd.api.types.is_numeric_dtype(col))


def _planes(a: np.ndarray) -> np.ndarray:
    """`a`'s bytes as planes: every value's first byte, then every value's second, ..."""
    return np.ascontiguousarray(a.view(np.uint8).reshape(len(a), a.itemsize).T)


def _values(planes: np.ndarray, dtype: str) -> np.ndarray:
    return np.ascontiguousarray(planes.T).view(np.dtype(dtype)).reshape(-1)


def _arrays(df: pd.DataFrame) -> dict[str, np.ndarray]:
    text = {c: pd.factorize(df[c], use_na_sentinel=True) for c in df.columns if _is_text(df[c])}
    # Grouped by the text columns, the first the outermost; ties keep the table's order.
    order = np.lexsort([text[c][0] for c in reversed(list(text))]) if text else np.arange(len(df))
    arrays = {
        COLUMNS: np.array([str(c) for c in df.columns], dtype=str),
        ORDER: _planes(np.diff(order.astype(np.int64), prepend=0)),
    }
    for i, name in enumerate(df.columns):
        if name in text:
            codes, uniques = text[name]
            arrays[f"{i}.codes"] = _planes(codes.astype(np.int32)[order])
            arrays[f"{i}.text"] = np.array([str(u) for u in uniques], dtype=str)
            continue
        values = df[name].to_numpy()
        if values.dtype.kind == "f":
            values = values.astype(np.float64)
            narrow = values.astype(np.float32)
            if np.array_equal(narrow.astype(np.float64), values, equal_nan=True):
                values = narrow
        arrays[f"{i}.{values.dtype.name}"] = _planes(values[order])
    return arrays


def write(df: pd.DataFrame, path: Path) -> None:
    """`df` into `path` (`.npz`), as the module says."""
    # A table grown from an empty one (object columns) holds numbers as objects: stored as
    # numbers, as a CSV would read them back, not as text.
    df = df.infer_objects()
    with zipfile.ZipFile(path, "w") as zf:
        for key, array in _arrays(df).items():
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, array, allow_pickle=False)
            info = zipfile.ZipInfo(f"{key}.npy", date_time=FIXED_TIME)
            info.compress_type = zipfile.ZIP_LZMA
            zf.writestr(info, buffer.getvalue())


def read(path: Path) -> pd.DataFrame:
    """The table `write` wrote to `path`, as `read_csv` reads the same rows."""
    with np.load(path, allow_pickle=False) as npz:
        names = [str(n) for n in npz[COLUMNS]]
        order = np.cumsum(_values(npz[ORDER], "int64"))
        out = {}
        for i, name in enumerate(names):
            if f"{i}.codes" in npz.files:
                codes = np.empty(len(order), dtype=np.int32)
                codes[order] = _values(npz[f"{i}.codes"], "int32")
                text = npz[f"{i}.text"].astype(object)
                if not len(text):  # no text at all: empty cells, as read_csv reads them
                    out[name] = np.full(len(codes), np.nan)
                    continue
                # Text and NaN in an object array: pandas types it as read_csv would.
                out[name] = pd.Series(np.where(codes >= 0, text[np.maximum(codes, 0)], np.nan))
                continue
            key = next(k for k in npz.files if k.partition(".")[0] == str(i))
            values = _values(npz[key], key.partition(".")[2])
            column = np.empty_like(values)
            column[order] = values
            out[name] = column.astype(np.float64) if column.dtype == np.float32 else column
    return pd.DataFrame(out, columns=names)
