"""Two timing runs of the default grid, case by case: the ratio B/A of every case ok in both
(total step time, as `./run_bench.sh compare` prints it), its percentiles, how many cases lie
within ±2% and ±5%, and how many cases' peak allocated memory is the same to the byte.

Used for a change that should move no figure: the spread of (before, after) is read beside the
spread of two runs of one commit. Run from the repository root:
`PYTHONPATH=. python scripts/before_after.py RUN_A RUN_B [RUN_A2 RUN_B2 ...]` (pairs)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from bench.store import results

AXES = ["mode", "optimizer", "variant", "batch_size"]


def load(folder: str) -> pd.DataFrame:
    # Through the store's reader: a published folder keeps its rows gzip-packed.
    df = pd.DataFrame(results.read_rows(Path(folder) / results.ROWS))
    return df[df["status"] == "ok"].set_index(AXES)


def pair(a_dir: str, b_dir: str) -> str:
    a, b = load(a_dir), load(b_dir)
    both = a.index.intersection(b.index)
    ratio = b.loc[both, "total_ms"] / a.loc[both, "total_ms"]
    pct = np.round(np.percentile(ratio, [5, 25, 50, 75, 95]), 4)
    same_peak = int((a.loc[both, "peak_alloc_gib"] == b.loc[both, "peak_alloc_gib"]).sum())
    return "\n".join(
        [
            f"A: {a_dir}",
            f"B: {b_dir}",
            f"{len(both)} cases ok in both ({len(a)} in A, {len(b)} in B)",
            f"ratio B/A percentiles 5/25/50/75/95: {pct}",
            f"within +-2%: {int((abs(ratio - 1) <= 0.02).sum())}  "
            f"within +-5%: {int((abs(ratio - 1) <= 0.05).sum())}",
            f"peak allocated memory the same to the byte: {same_peak} of {len(both)}",
        ]
    )


if __name__ == "__main__":
    folders = sys.argv[1:]
    if not folders or len(folders) % 2:
        sys.exit("usage: scripts/before_after.py RUN_A RUN_B [RUN_A2 RUN_B2 ...]")
    print("\n\n".join(pair(a, b) for a, b in zip(folders[::2], folders[1::2], strict=True)))
