"""What pytest-benchmark's `--benchmark-compare-fail=median:N%` sees between consecutive saves:
each benchmark's median in save i+1 over save i, as that check computes it (the change of the
`median` field, in percent), for every pair of saves in a storage folder.

    python scripts/gate_ratios.py results/ab-h200/pytest-default/Linux-CPython-3.12-64bit

writes gate_ratios.csv beside that folder: one row per pair and benchmark, with the change and
whether a 3%, a 5% and a 10% threshold fail it.
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import pandas as pd

THRESHOLDS = (3, 5, 10)
"""The `median:N%` thresholds each change is checked against."""


def main(storage: Path) -> pd.DataFrame:
    saves = sorted(storage.glob("*.json"))
    medians = {
        s.stem: {b["name"]: b["stats"]["median"] for b in json.loads(s.read_text())["benchmarks"]}
        for s in saves
    }
    rows = []
    for before, after in itertools.pairwise(saves):
        for name, median in medians[after.stem].items():
            change = 100 * (median / medians[before.stem][name] - 1)
            rows.append(
                {
                    "before": before.stem,
                    "after": after.stem,
                    "benchmark": name,
                    "median_ms_before": round(1e3 * medians[before.stem][name], 4),
                    "median_ms_after": round(1e3 * median, 4),
                    "change_pct": round(change, 2),
                    **{f"fails_{pct}pct": change > pct for pct in THRESHOLDS},
                }
            )
    df = pd.DataFrame(rows)
    df.to_csv(storage.parent / "gate_ratios.csv", index=False)
    return df


if __name__ == "__main__":
    table = main(Path(sys.argv[1]))
    table["phase"] = table["benchmark"].str.extract(r"-(\w+)\]$", expand=False)
    print(
        table.groupby(["after", "phase"])["change_pct"]
        .agg(["min", "max"])
        .unstack("phase")
        .round(2)
        .to_string()
    )
