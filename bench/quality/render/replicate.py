"""`quality --replicate`'s page: the verdicts of two studies of the same modes on disjoint
seeds at one commit, side by side, and whether any contradicts the other
(`bench.verdicts.replication`). Written into both folders as `replication.md`."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from bench.quality.render import report as quality
from bench.quality.render import runs as quality_runs
from bench.text.tables import markdown
from bench.verdicts import replication

PAGE = quality_runs.REPLICATION


def write(first: Path, second: Path) -> str:
    """The page for the two study folders, written into each; its text."""
    a, b = quality.study(first), quality.study(second)
    words = [{m: v.verdict for m, v in s["verdicts"].items()} for s in (a, b)]
    rows = pd.DataFrame(replication.table(*words))
    clash = rows[rows["agreement"] == replication.CONTRADICT] if len(rows) else rows
    seeds = [", ".join(map(str, sorted(set(s["summary"]["seed"])))) for s in (a, b)]
    head = (
        f"**Contradictions**: {', '.join(clash['mode'])}."
        if len(clash)
        else "**No verdict contradicts the other** (inside the margin in one and outside in the "
        "other, or opposite signs, would)."
    )
    text = "\n".join([
        "# Replication: one study twice, on disjoint seeds",
        "",
        f"First: `{first.name}` (seeds {seeds[0]}). Second: `{second.name}` (seeds {seeds[1]}).",
        "",
        head,
        "",
        markdown(rows) if len(rows) else "No mode was judged in both.",
        "",
    ])  # fmt: skip
    for folder in (first, second):
        (folder / PAGE).write_text(text)
    return text
