"""What a row of a folder older than a column lacks, filled where `bench.store.results.load`
reads it: the columns of a run of several ranks (a one-process row is one rank, its batch the
global batch, its throughput one GPU's) and where its ranks ran (nodes, node rank). Pandas only."""

from __future__ import annotations

import math

import pandas as pd


def with_rank_columns(df: pd.DataFrame) -> pd.DataFrame:
    """The columns of a run of several ranks, for rows of one-process folders that predate
    them: one rank, the global batch is the batch, all throughput is one GPU's."""
    if "world_size" not in df:
        df["world_size"] = 1
    df["world_size"] = df["world_size"].fillna(1).astype(int)
    if "global_batch_size" not in df:
        df["global_batch_size"] = df["batch_size"]
    df["global_batch_size"] = df["global_batch_size"].fillna(df["batch_size"])
    if "samples_per_s_per_gpu" not in df:
        df["samples_per_s_per_gpu"] = df.get("samples_per_s", math.nan)
    return _with_nodes(df)


def _with_nodes(df: pd.DataFrame) -> pd.DataFrame:
    """`nodes` and `node_rank` for rows that predate them (and for one-process rows, which have
    no `nodes`): as many nodes as the row's `hosts`, one without them; node rank 0 where there
    is one node, unknown otherwise."""
    hosts = df["hosts"] if "hosts" in df else pd.Series(math.nan, index=df.index)
    counted = hosts.map(lambda h: len(str(h).split(",")) if isinstance(h, str) and h else 1)
    nodes = df["nodes"] if "nodes" in df else pd.Series(math.nan, index=df.index)
    df["nodes"] = nodes.fillna(counted).astype(int)
    node_rank = df["node_rank"] if "node_rank" in df else pd.Series(math.nan, index=df.index)
    df["node_rank"] = node_rank.where(node_rank.notna() | (df["nodes"] != 1), 0)
    return df
