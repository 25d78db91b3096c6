"""The rerun check's premise, tested on two studies of the same settings and seeds made at one
commit: per (mode, seed), how far its second best held-out loss lands from its first, against the
tolerance the rule derives from the first study's seeds (`bench.quality.commit.tolerances`:
z x sqrt(2) x the mode's seed SD). The rule holds where unchanged training stays inside it.

Usage, from the repository root:
`PYTHONPATH=. python scripts/rerun_noise.py FIRST_STUDY SECOND_STUDY`.
"""

import sys
from pathlib import Path

import pandas as pd

from bench.quality import tables
from bench.quality.commit import tolerances
from bench.text.tables import markdown
from bench.verdicts import training


def best(study: Path) -> pd.DataFrame:
    t = tables.load(study)
    summary = training.per_run(t["curves"], t["runs"])
    return summary[summary["status"] == "ok"]


def main(first: Path, second: Path) -> str:
    a, b = best(first), best(second)
    modes = list(dict.fromkeys(a["mode"]))
    limits = tolerances(a, modes)
    both = a.merge(b, on=["mode", "seed"], suffixes=("_first", "_second"))
    both["apart"] = (both["best_loss_second"] - both["best_loss_first"]).abs()
    both["tolerance"] = both["mode"].map(lambda m: limits[m]["tolerance"])
    both["seed_sd"] = both["mode"].map(lambda m: limits[m]["seed_sd"])
    both["inside"] = both["apart"] <= both["tolerance"]
    shown = ["mode", "seed", "best_loss_first", "best_loss_second", "apart", "seed_sd",
             "tolerance", "inside"]  # fmt: skip
    margin = training.margin_of(a).value
    return (
        f"{first.name} against {second.name}: margin {margin:.4g}; "
        f"{int(both['inside'].sum())} of {len(both)} reruns inside their tolerance\n\n"
        + markdown(both[shown].sort_values(["mode", "seed"]))
    )


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    print(main(Path(sys.argv[1]), Path(sys.argv[2])))
