"""How the numerics report writes its tables: through `bench.publish.tables` (at most 4
significant digits, `–` when missing), with shares shown as percentages."""

from __future__ import annotations

import pandas as pd

from bench.publish import tables


def markdown(df: pd.DataFrame) -> str:
    """A readable table (`bench.publish.tables.markdown`)."""
    return tables.markdown(df)


def percent(df: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
    """`df` with the shares in `cols` written as percentages with three decimals (empty when
    not measured)."""
    df = df.copy()
    for c in cols:
        df[c] = df[c].map(lambda v: f"{v:.3%}" if pd.notna(v) else "")
    return df
