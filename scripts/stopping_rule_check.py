"""The quality study's stopping rule replayed on studies that trained their whole budget: for each
patience, how many runs would have stopped before their best held-out loss (and by how much that
best would be worse), and the share of the budget's steps they would have trained. The rule is
the study's own (`bench.quality.train.past_best`), applied to each run's committed curve.

Usage, from the repository root: `PYTHONPATH=. python scripts/stopping_rule_check.py STUDY...`.
"""

import json
import sys
from pathlib import Path

import pandas as pd

from bench.quality import tables
from bench.quality.train import past_best
from bench.store import schema
from bench.text.tables import markdown

PATIENCE = (2, 3, 4, 5, 6, 8, 10)


def replay(study: Path, patience: int) -> dict[str, object]:
    curves = tables.load(study)["curves"]
    missed, worst, steps, whole, runs = 0, 0.0, 0, 0, 0
    for _, g in curves.groupby(["mode", "seed"]):
        g = g.sort_values("step")
        losses, at = g["heldout_loss"].tolist(), g["step"].tolist()
        stop = next(
            (i for i in range(len(losses)) if past_best(losses[: i + 1], patience)),
            len(losses) - 1,
        )
        gap = min(losses[: stop + 1]) - min(losses)
        missed, worst = missed + (gap > 0), max(worst, gap)
        steps, whole, runs = steps + at[stop], whole + at[-1], runs + 1
    return {
        "study": study.name.split("_quality_")[-1],
        "patience": patience,
        "runs": runs,
        "runs stopped before their best": missed,
        "worst loss given up": f"{worst:.4g}",
        "share of the steps": f"{steps / whole:.3f}",
    }


def whole_budget(study: Path) -> bool:
    """Whether the study trained every run's whole budget (no stopping rule of its own)."""
    settings = json.loads((study / "env.json").read_text()).get(schema.settings_key("quality"))
    return not (settings or {}).get("patience", 0)


if __name__ == "__main__":
    studies = [Path(s) for s in sys.argv[1:]]
    for study in studies:
        if not whole_budget(study):
            print(f"{study.name}: left out, its runs stopped by the rule already")
    rows = [replay(s, p) for s in studies if whole_budget(s) for p in PATIENCE]
    print(markdown(pd.DataFrame(rows)))
