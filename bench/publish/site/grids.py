"""Consecutive runs of one grid: for each timing run, the run before it on the same grid and GPU
model, and the compare verdicts between the two (`bench.publish.compare`)."""

from __future__ import annotations

import sys
from dataclasses import dataclass

import pandas as pd

from bench.cases import case
from bench.faults import UsageError
from bench.publish import compare
from bench.store.run_env import RunEnv
from bench.store.tree import Run
from bench.verdicts.defaults import CONFIDENCE, MIN_EFFECT


def grid_key(env: RunEnv) -> tuple:
    """What a timing run's env.json says of its grid, in a form two runs can be matched on."""
    cfg = env.get("config", {})
    defaults = case.axis_defaults()
    swept = tuple(
        (sweep.plural, tuple(sorted(map(str, cfg.get(sweep.plural) or [defaults[name]]))))
        for name, sweep in case.swept().items()
    )
    # The model and its sizes' values, as case ids spell them (`bench.store.schema` reads older
    # code's config into `sizes` too, named or not).
    model = (str(cfg.get("model", "mlp")), str(cfg.get("preset")))
    sizes = "x".join(map(str, (cfg.get("sizes") or {}).values()))
    return (str(env.get("gpu")), int(cfg.get("world_size") or 1), *model, sizes, *swept)


@dataclass(frozen=True)
class Pair:
    """A timing run and the run before it on the same grid, with the verdicts between them."""

    before: Run
    after: Run
    table: pd.DataFrame
    """`compare.compare(before, after)`: one row per case of both, with its verdict."""

    def counts(self) -> dict[str, int]:
        """How many cases got each verdict, slower first."""
        found = self.table["verdict"].value_counts() if len(self.table) else pd.Series()
        order = ["slower", "faster", "same", "unclear", "missing"]
        return {v: int(found[v]) for v in order if v in found}

    def words(self) -> str:
        """The counts in words: `2 slower, 63 same`."""
        return ", ".join(f"{n} {v}" for v, n in self.counts().items()) or "no case in both"

    def markdown(self) -> str:
        """The comparison as `ampbench compare` writes it, without its title."""
        text = compare.render(
            self.table,
            run_a=self.before.path,
            run_b=self.after.path,
            pair=None,
            min_effect=MIN_EFFECT,
            confidence=CONFIDENCE,
            warnings=compare.env_differences(self.before.env, self.after.env),
        )
        return text.split("\n", 1)[1].lstrip("\n")  # the title is the page's


def pairs(timing: list[Run]) -> dict[str, Pair]:
    """Each timing run with a run before it on its grid: that pair (`timing` in start order)."""
    last: dict[tuple, Run] = {}
    found = {}
    for run in timing:
        key = grid_key(run.env)
        if key in last and "ended" in run.env and "ended" in last[key].env:
            before = last[key]
            try:
                table = compare.compare(
                    before.path, run.path, min_effect=MIN_EFFECT, confidence=CONFIDENCE
                )
            except (UsageError, OSError) as exc:  # one damaged folder costs its comparison only
                print(f"ampbench: warning: {run.path.name} not compared: {exc}", file=sys.stderr)
            else:
                found[str(run.path)] = Pair(before, run, table)
        if "ended" in run.env:
            last[key] = run
    return found
