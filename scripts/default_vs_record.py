"""The default run at e5180fb against the run of record (062f3e4): the ratio of every ok case's
total step time (B/A, as `./run_bench.sh compare` prints it), and per phase for the cases
beyond +-5%.

Run from the repository root: `PYTHONPATH=. python scripts/default_vs_record.py`."""

from pathlib import Path

import numpy as np
import pandas as pd

from bench.store import results

A = "results/20261201T020222Z_NVIDIA-H200_062f3e4"
B = "results/20261203T130741Z_NVIDIA-H200_e5180fb"


def load(d: str) -> pd.DataFrame:
    # Through the store's reader: a published folder keeps its rows gzip-packed.
    df = pd.DataFrame(results.read_rows(Path(d) / results.ROWS))
    return df[df["status"] == "ok"].set_index(["mode", "optimizer", "variant", "batch_size"])


a, b = load(A), load(B)
both = a.index.intersection(b.index)
ratio = b.loc[both, "total_ms"] / a.loc[both, "total_ms"]
print(f"{len(both)} cases ok in both")
print(
    "ratio B/A percentiles 5/25/50/75/95:", np.round(np.percentile(ratio, [5, 25, 50, 75, 95]), 4)
)
within = {p: int((abs(ratio - 1) <= p / 100).sum()) for p in (2, 5)}
print("within +-2%:", within[2], " within +-5%:", within[5])
far = ratio[abs(ratio - 1) > 0.05].index
cols = ["fwd_ms", "bwd_ms", "step_ms", "total_ms"]
diff = b.loc[far, cols] - a.loc[far, cols]
table = pd.concat({"A": a.loc[far, cols], "B": b.loc[far, cols], "B-A": diff}, axis=1).round(3)
print(table.to_string())
rest = ratio.drop(far)
print("the other cases: ratio from", round(rest.min(), 4), "to", round(rest.max(), 4))
