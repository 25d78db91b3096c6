"""Numbers a person can read: the one place a DataFrame becomes a table cell (at most 4
significant digits, whole numbers exact, `–` for a value not measured, `yes`/`no`), and figures
and lists in sentences (`figure`, `joined`, `batch_sizes`)."""

from __future__ import annotations

import math
from numbers import Integral, Real

import pandas as pd

MISSING = "–"
"""What a cell shows for a value that was not measured; the table's notes say why."""
SIG_DIGITS = 4


def cell(value: object, digits: int = SIG_DIGITS) -> str:
    """One cell's text: at most `digits` significant digits, `–` for a missing value."""
    if value is None or value is pd.NA or value is pd.NaT:
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Integral):
        return str(int(value))
    if isinstance(value, Real):
        x = float(value)
        if math.isnan(x):
            return MISSING
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        return number(x, digits)
    text = str(value)
    return MISSING if text in ("nan", "None", "NaN", "<NA>") else text


EXACT_BELOW = 2.0**53
"""Whole numbers below this print exactly: a float holds every integer up to it."""


def number(x: float, digits: int = SIG_DIGITS) -> str:
    """`x` to `digits` significant digits, plainly (296200, 12.35), a whole number exactly
    (65536, not 65540), under 1e-4 in scientific notation (1.235e-07)."""
    if x == 0:
        return "0"
    if float(x).is_integer() and 10**digits <= abs(x) < EXACT_BELOW:
        return str(int(x))
    if abs(x) < 1e-4:
        return f"{x:.{digits - 1}e}"
    rounded = float(f"{x:.{digits - 1}e}")  # exactly `digits` significant digits
    magnitude = math.floor(math.log10(abs(rounded)))
    decimals = digits - 1 - magnitude
    if decimals <= 0:
        return str(int(rounded))
    return f"{rounded:.{decimals}f}"


def formatted(df: pd.DataFrame, digits: int = SIG_DIGITS) -> pd.DataFrame:
    """`df` with every cell as its display text (`cell`)."""
    return df.apply(lambda col: col.map(lambda v: cell(v, digits))).astype(str)


def markdown(df: pd.DataFrame, *, index: bool = False, digits: int = SIG_DIGITS) -> str:
    """A GitHub markdown table of `df`, every cell through `cell`. Numbers stay right-aligned."""
    if df.empty and len(df.columns) == 0:
        return ""
    shown = formatted(df.reset_index() if index else df, digits)
    numeric = [
        pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c])
        for c in (df.reset_index() if index else df).columns
    ]
    align = ["right" if n else "left" for n in numeric]
    return shown.to_markdown(index=False, disable_numparse=True, colalign=align)


def finite(value: object) -> bool:
    """Whether `value` is a real, finite number (not a bool, not NaN, None or text)."""
    return isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value)


def figure(x: float) -> str:
    """A figure in a sentence: 3 significant digits."""
    return number(float(x), 3)


def joined(items: list[str]) -> str:
    """Items joined as prose: a; a and b; a, b and c."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def batch_sizes(sizes: list[int]) -> str:
    """`[256]` → "256"; `[256, 1024]` → "256 and 1024"; three or more → "256–4096"."""
    sizes = sorted(int(s) for s in sizes)
    return joined([str(s) for s in sizes]) if len(sizes) < 3 else f"{sizes[0]}–{sizes[-1]}"
