"""The gates on a comparison's table (`compare`, `ab`): its exit status from a slower case
(`--fail-on-slower`), a case using more memory (`--fail-on-more-memory`) or a failed criterion
of a criteria file (`--criteria`), and the memory tolerance the verdicts use (the command line's,
else the criteria file's `[memory] tolerance`, else `bench.verdicts.memory.DEFAULT`)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from bench.faults import UsageError
from bench.store.run_env import RunEnv
from bench.verdicts import criteria, criteria_file, memory


def memory_tolerance(given: str | None, criteria_path: Path | None) -> memory.Tolerance:
    """`given` (`--memory-tolerance`), else the criteria file's, else the default. A bad
    criteria file is one line (`UsageError`), before anything is read or run."""
    if given is not None:
        return memory.Tolerance.parse(given)
    if criteria_path is not None:
        try:
            found = criteria_file.memory_tolerance(criteria_path)
        except criteria_file.CriteriaError as exc:
            raise UsageError(str(exc)) from exc
        if found is not None:
            return memory.Tolerance.parse(found)
    return memory.DEFAULT


def exit_status(
    table: pd.DataFrame,
    env: RunEnv,
    *,
    fail_on_slower: bool,
    fail_on_more_memory: bool,
    criteria: Path | None,
) -> tuple[int, str]:
    """1 when a gate asked for fails, else 0; and the criteria's lines (empty without a file).
    `env`: B's environment, which a criterion's `gpu` is matched against."""
    failed = fail_on_slower and bool((table["verdict"] == "slower").any())
    if fail_on_more_memory and "memory_verdict" in table:
        failed |= bool((table["memory_verdict"] == "more memory").any())
    text = ""
    if criteria is not None:
        try:
            checked = _check(criteria, table, env)
        except criteria_file.CriteriaError as exc:
            raise UsageError(str(exc)) from exc
        text = checked.render()
        failed |= checked.failed
    return (1 if failed else 0), text


def _check(path: Path, table: pd.DataFrame, env: RunEnv) -> criteria.Checked:
    return criteria.check_comparison(criteria_file.read(path), table, env)
