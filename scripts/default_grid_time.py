"""Where a timing run's time went, by mode, variant, batch size and Adam: each case's share of the
run's wall time (the difference of its row's `elapsed_s` from the row before it) and its compile
or capture time (`prepare_s`). Reads a committed run folder; writes nothing but its output.

    python scripts/default_grid_time.py results/20261204T182156Z_NVIDIA-H200_7870f93 \\
        > results/sessions/default_grid_time.txt
"""

from __future__ import annotations

import sys

from bench.ground import catalog
from bench.store import results


def main(folder: str) -> None:
    df = results.load(folder).sort_values("elapsed_s")
    df["case_s"] = df["elapsed_s"].diff().fillna(df["elapsed_s"])
    print(f"{folder}: {len(df)} cases, {df['elapsed_s'].max():.1f} s from the first case's start")
    for axis in ("mode", "variant", "batch_size", "optimizer"):
        print(f"\nseconds by {axis} (cases; compile or capture)")
        by = df.groupby(axis, sort=False)[["case_s", "prepare_s"]].sum().round(1)
        print(by.to_string())
    full = [m for m in catalog.default_modes() if m not in catalog.default_modes(full=False)]
    moved = df[df["mode"].isin(full)]["case_s"].sum()
    print(f"\nthe modes only the --full grid runs now ({', '.join(full)}): {moved:.1f} s")


if __name__ == "__main__":
    main(sys.argv[1])
