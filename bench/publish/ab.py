"""A comparison folder of `ampbench ab` rendered from its files alone: report.md and verdicts.csv,
each revision's run folders one round each, judged by `bench.publish.compare`."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from bench.publish import compare
from bench.store import paths, results
from bench.store.run_env import RunEnv
from bench.text import tables
from bench.verdicts import memory
from bench.verdicts.defaults import CONFIDENCE, MIN_EFFECT

VERDICTS_CSV = "verdicts.csv"
SETTINGS = {"statistic": "median", "min_effect": MIN_EFFECT, "confidence": CONFIDENCE, "looks": 1}
"""How the verdicts are made where the folder does not record it (`ab`'s defaults)."""
MEMORY_TOLERANCE = "memory_tolerance"
"""The ab_config key of the memory verdicts' tolerance; a folder from before it: the default."""


def settings(env: RunEnv) -> dict[str, object]:
    """The verdicts' settings the folder records (`ab_config`), else the defaults."""
    recorded = env.get("ab_config") or {}
    return {k: recorded.get(k, v) for k, v in SETTINGS.items()}


def _revision(cfg: dict, side: str) -> str:
    rev, sha = cfg.get(f"rev_{side.lower()}"), str(cfg.get(f"commit_{side.lower()}") or "")
    return f"`{rev}` ({sha[:7]})" if rev and rev != sha else f"`{sha[:7]}`"


def _processes(env: RunEnv) -> str:
    """The processes in the order they ran, each with its run folder and its time."""
    rows = []
    for r in env.get("rounds", []):
        start, end = pd.Timestamp(r["started"]), pd.Timestamp(r["ended"])
        rows.append(
            {
                "process": r["process"],
                "revision": r["side"],
                "round": r["round"],
                "run folder": r.get("folder") or "",
                "seconds": round((end - start).total_seconds()),
                "exit": r["exit"],
            }
        )
    return tables.markdown(pd.DataFrame(rows)) if rows else "No process ran."


def stopping_lines(env: RunEnv) -> list[str]:
    """How many rounds each side ran and why the rounds stopped, with each look of the stopping
    rule (`bench.jobs.ab_looks`); nothing for a folder from before it."""
    done = [r for r in env.get("rounds", []) if r.get("folder")]
    ran = {side: sum(r["side"] == side for r in done) for side in ("A", "B")}
    stopped = env.get("stopped")
    if not stopped:
        return []
    lines = [
        "## When it stopped",
        "",
        f"Rounds run: {ran['A']} of A, {ran['B']} of B. Why it stopped: {stopped['reason']}.",
        "",
    ]
    looks = env.get("looks") or []
    if looks:
        rows = [
            {
                "rounds a side": f"{lk['rounds_a']}:{lk['rounds_b']}",
                "cases": lk["cases"],
                **{w: lk["verdicts"].get(w, 0) for w in ("faster", "slower", "same", "unclear")},
                "every case decided": "yes" if lk["decided"] else "no",
            }
            for lk in looks
        ]
        lines += [
            "Each look at the rounds so far (the verdicts after the family's correction, at that "
            "look's share of alpha):",
            "",
            tables.markdown(pd.DataFrame(rows)),
            "",
        ]
    return lines


def write(folder: Path) -> tuple[pd.DataFrame, str]:
    """Judge the folder's rounds as it records, write report.md and verdicts.csv; (table, text)."""
    env = results.read_env(folder)
    chosen = settings(env)
    cfg = env.get("ab_config", {})
    recorded = cfg.get(MEMORY_TOLERANCE) or memory.DEFAULT.spec()
    tolerance = memory.Tolerance.parse(str(recorded))
    table = compare.compare(folder / "A", folder / "B", **chosen, memory_tolerance=tolerance)
    warnings = compare.env_differences(table.attrs["env_a"], table.attrs["env_b"])
    chosen.pop("looks")
    body = compare.render(
        table,
        run_a=folder / "A",
        run_b=folder / "B",
        pair=None,
        min_effect=float(chosen["min_effect"]),
        confidence=float(chosen["confidence"]),
        warnings=warnings,
        title="## Verdicts",
        show_sides=False,
    )
    options = " ".join(cfg.get("run_options") or []) or "(none: run's defaults)"
    lines = [
        f"# ampbench ab: {_revision(cfg, 'A')} against {_revision(cfg, 'B')}",
        "",
        f"A (baseline): {_revision(cfg, 'A')}; B (candidate): {_revision(cfg, 'B')}. Each round "
        "is one fresh process of the revision's own `python -m bench run`, checked out into a "
        f"temporary worktree, with the run options `{options}`; the rounds alternated "
        f"{' '.join([r['side'] for r in env.get('rounds', [])] or cfg.get('order') or [])}.",
        "",
        f"Machine: {env.get('gpu')} ({env.get('cpu')}, {env.get('cpu_count')} cores), torch "
        f"{env.get('torch')}. Produced by: `{paths.shown_command(str(env.get('command')))}`.",
        "",
        *stopping_lines(env),
        body.rstrip("\n"),
        "",
        "## Processes",
        "",
        _processes(env),
        "",
    ]
    text = "\n".join(lines)
    (folder / results.REPORT).write_text(text)
    csv = table.drop(columns=["too_few"], errors="ignore")
    csv.to_csv(folder / VERDICTS_CSV, index=False)
    return table, text
