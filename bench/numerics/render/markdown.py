"""How the numerics report writes cells: percentages, folded blocks, chains, failures."""

from __future__ import annotations

import itertools
import re

import pandas as pd

from bench.numerics.measure.tables import TABLES


def percent(df: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
    """`df` with the shares in `cols` as percentages, three decimals (empty if not measured)."""
    df = df.copy()
    for c in cols:
        df[c] = df[c].map(lambda v: f"{v:.3%}" if pd.notna(v) else "")
    return df


_BLOCK_INDEX = re.compile(r"\.\d+\.")
"""A block's index inside a module path (`blocks.3.attn`): what repeats in a transformer."""


def block_key(label: str) -> str:
    """`label` with every block index written `*` (`blocks.*.attn`)."""
    return _BLOCK_INDEX.sub(".*.", label)


def times(labels: object, counts: object) -> list[str]:
    """Each label with how often it repeats where more than once (`blocks.*.attn ×12`)."""
    return [f"{k} ×{n}" if n > 1 else k for k, n in zip(labels, counts, strict=True)]


def fold_blocks(df: pd.DataFrame, label: str) -> pd.DataFrame:
    """`df` with rows that differ only in `label`'s block indices shown once (`blocks.*.attn
    output ×12`); a group whose other cells differ keeps its rows."""
    keys = df[label].map(block_key)
    if keys.equals(df[label]):
        return df
    others = [c for c in df.columns if c != label]
    out = []
    for key, group in df.groupby(keys, sort=False):
        if len(group) > 1 and len(group[others].astype(str).drop_duplicates()) == 1:
            out.append(group.iloc[[0]].assign(**{label: f"{key} ×{len(group)}"}))
        else:
            out.append(group)
    return pd.concat(out, ignore_index=True)


def fold_shares(
    df: pd.DataFrame, by: list[str], label: str, shares: list[str], worst: list[str]
) -> pd.DataFrame:
    """Census rows of repeated blocks folded: `shares` weighted by `numel`, `worst` at max."""
    keys = df[label].map(block_key)
    if keys.equals(df[label]):
        return df
    df = df.assign(**{label: keys})
    counts = df.groupby([*by, label], sort=False)[label].transform("size")
    df[label] = times(df[label], counts)
    weighted = df[shares].mul(df["numel"], axis=0)
    grouped = pd.concat([df[[*by, label]], weighted, df[["numel", *worst]]], axis=1).groupby(
        [*by, label], sort=False
    )
    out = grouped[[*shares, "numel"]].sum()
    out[shares] = out[shares].div(out["numel"], axis=0)
    out[worst] = grouped[worst].max()
    return out.reset_index()


def chain_text(chain: list[str]) -> str:
    """An autograd chain as `A → B ×24 → C`: a transformer's residual stream repeats its
    AddBackward0 once per block and sublayer, which written out would hide the chain's shape."""
    runs = [(node, len(list(run))) for node, run in itertools.groupby(chain)]
    return " → ".join(times([node for node, _ in runs], [n for _, n in runs]))


def table_file(t: dict, name: str) -> str:
    """Table `name`'s file name in the study's folder, of the form its version wrote."""
    return t.get("files", {}).get(name, TABLES[name].file)


def failure_reasons(failed: pd.DataFrame, kind: str, mode: str | None = None) -> str | None:
    """Why `kind` jobs (of `mode`) failed: their first three errors, or None if none did."""
    rows = failed[failed["kind"] == kind]
    if mode is not None:
        rows = rows[rows["mode"] == mode]
    if rows.empty:
        return None
    why = list(dict.fromkeys(rows["error"].fillna("").astype(str)))
    more = f"; {len(why) - 3} other errors" if len(why) > 3 else ""
    return "; ".join(why[:3]) + more


def no_rows(failed: pd.DataFrame, kind: str) -> str:
    """The one line of a section whose `kind` jobs left no rows: every one failed, and why."""
    why = failure_reasons(failed, kind)
    if why is None:
        return f"No rows: the study has no {kind} rows, and no {kind} job failed."
    return f"No rows: every {kind} job failed ({why}; see the jobs that failed above)."
