"""What a time-to-quality study's report says of its runs and seeds beyond the mode table: the
commits they trained at, where the stopping rule ended them, what the seeds the margin rule needs
would cost, and a sequential study's looks."""

from __future__ import annotations

import pandas as pd

from bench.quality import tables
from bench.quality.config import QualityConfig
from bench.store.run_env import RunEnv
from bench.text.tables import MISSING, figure, joined, number
from bench.verdicts import replication, sequential, training


def span(values: pd.Series, show=figure) -> str:
    """The seeds' mean and range of a column (one value alone; `–` for none)."""
    values = values.dropna()
    if values.empty:
        return MISSING
    if len(values) == 1 or values.min() == values.max():
        return show(values.iloc[0])
    return f"{show(values.mean())} ({show(values.min())}–{show(values.max())})"


UNCOMMITTED = " (uncommitted changes)"


UNKNOWN_COMMIT = "an unknown commit"


def _started(env: RunEnv) -> str:
    sha = env.get("commit")
    if not sha or sha == "unknown":  # a run outside git
        return UNKNOWN_COMMIT
    return str(sha)[:7] + (UNCOMMITTED if env.get("dirty") else "")


def _resumed(env: RunEnv) -> list[tuple[str, str]]:
    """(short commit, when) of each resume at another commit, as env.json records it."""
    out = []
    for r in env.get("resumed") or []:
        for d in r.get("differs", []):
            if d.startswith("commit "):
                out.append((d.rsplit(" ", 2)[-2].strip("'")[:7], str(r.get("at", "?"))))
    return out


def trained_at(env: RunEnv, runs: pd.DataFrame | None = None) -> list[str]:
    """Every commit the study's runs may have trained at, short, first seen first: the one it
    started at, each it was resumed at and each its rows name (`UNCOMMITTED` after one with
    uncommitted changes). A study trained at one commit gives one, without `UNCOMMITTED`."""
    named = [_started(env), *(here for here, _ in _resumed(env))]
    if runs is not None and "commit" in runs:
        rows = runs[runs["commit"].notna()]
        dirty = rows["dirty"].eq(True) if "dirty" in rows else pd.Series(False, rows.index)
        named += [
            str(c)[:7] + (UNCOMMITTED if d else "")
            for c, d in zip(rows["commit"], dirty, strict=True)
        ]
    return list(dict.fromkeys(named))


def one_commit(at: list[str]) -> bool:
    """Whether `trained_at`'s commits are one, committed: a study a checkout can train again."""
    return len(at) == 1 and not at[0].endswith(UNCOMMITTED) and at[0] != UNKNOWN_COMMIT


OVERRIDE = "AMPBENCH_GIT_COMMIT"
"""The variable a copied tree's commit is given by (`bench.measure.env.OVERRIDE`; publishing
imports no measuring)."""


def commits(env: RunEnv, runs: pd.DataFrame | None = None) -> str:
    """The commit the study started at, each commit it was resumed at, and which runs trained at
    which commit where their rows record it (`runs`' `commit` column); where `OVERRIDE` named a
    commit rather than git, it says so."""
    return _commits(env, runs) + _given(env, runs)


def _given(env: RunEnv, runs: pd.DataFrame | None) -> str:
    sources = {env.get("commit_source")}
    if runs is not None and "commit_source" in runs:
        sources |= set(runs["commit_source"].dropna())
    return f" (named by {OVERRIDE}, not read from git)" if OVERRIDE in sources else ""


def _commits(env: RunEnv, runs: pd.DataFrame | None) -> str:
    first = _started(env)
    later = [f"{here} ({at[:16]})" for here, at in _resumed(env)]
    if not later:
        return f"commit {first}"
    said = f"started at commit {first}, resumed at {joined(list(dict.fromkeys(later)))}: "
    unknown = said + "runs trained at each (which run at which commit was not recorded)"
    if runs is None or "commit" not in runs:
        return unknown
    trained = runs[runs["status"] == "ok"] if "status" in runs else runs
    recorded = trained["commit"].dropna()
    if recorded.empty:
        return unknown
    if "dirty" in trained:
        dirty = trained.loc[recorded.index, "dirty"].eq(True)
        recorded = recorded.where(~dirty, recorded + " (uncommitted changes)")
    parts = [f"{n} at {c}" for c, n in recorded.value_counts(sort=False).items()]
    rest = len(trained) - len(recorded)
    others = f"; the other {rest} did not record theirs" if rest else ""
    return said + f"each run's row names its commit: {joined(parts)}{others}"


def final_named(runs: pd.DataFrame) -> str:
    """The mode table's note on its final held-out loss, where the stopping rule ended runs."""
    if not (runs["stopped"] == tables.PAST_BEST).any():
        return ""
    return " final held-out loss: at each run's last evaluation, where it stopped."


def stopping(cfg: QualityConfig, runs: pd.DataFrame) -> str:
    """The stopping rule, and the runs it stopped: a run's best held-out loss is the best before
    it stopped (docs/quality.md, "When a run stops")."""
    if not cfg.patience:
        return ""
    trained = runs[runs["stopped"].notna()]
    stopped = trained[trained["stopped"] == tables.PAST_BEST]
    said = (
        f"{len(stopped)} of {len(trained)} runs stopped past their best, after "
        f"{span(stopped['steps'])} steps"
        if len(stopped)
        else "no run stopped early"
    )
    return (
        f" A run stops once {cfg.patience} evaluations in a row bring no new best held-out loss, "
        f"and its best is the best before it stopped: {said}."
    )


def extra_seeds(s: dict) -> str:
    """What the seeds the rule needs would cost, from this study's step times."""
    mg, cfg = s["margin"], s["cfg"]
    timing = s["tables"]["timing"]
    ok = timing[timing["status"] == "ok"]
    if mg is None or mg.enough or ok.empty:
        return ""
    if mg.seeds_needed > training.MAX_SEEDS:
        return (
            " No seed count within reach decides at this margin: fp32's seeds spread too wide "
            "against 1% of its loss."
        )
    more = mg.seeds_needed - mg.seeds
    step_s = float(ok["step_ms"].sum()) / 1e3 * cfg.steps
    return (
        f" {more} more seed{'s' if more > 1 else ''} of every mode: about "
        f"{figure(more * step_s / 60)} min of device time (computed: steps × step times"
        f"{', if no run stops early' if cfg.patience else ''})."
    )


def looks(s: dict) -> list[str]:
    """A sequential study's looks, and per mode the look that decided it or the seeds needed."""
    cfg, looks, judged = s["cfg"], s["looks"], s["judged"]
    if not cfg.sequential:
        return []
    if not looks:
        return [f"**Looks**: none judged yet (cap {cfg.max_seeds} seeds); --resume goes on.", ""]
    design = sequential.Design(len(cfg.seeds), cfg.max_seeds)
    per = []
    for m, j in judged.items():
        if j.decided:
            per.append(f"{m} at {j.seeds} seeds ({training.confidence_of(j.level)} interval)")
        elif j.verdict.needed:
            count = (
                f"more than {training.MAX_SEEDS}"
                if j.verdict.needed > training.MAX_SEEDS
                else j.verdict.needed
            )
            per.append(f"{m} not known at {j.seeds} seeds, would need {count} a side")
    return [
        f"**Looks**: at {', '.join(map(str, looks))} seeds of a cap of {cfg.max_seeds}; each "
        f"look judged at its own level ({design.spending}-type alpha spending, "
        f"{design.alpha:.0%} a side over every look), so the error rate holds over the looks. "
        f"{'; '.join(per)}.",
        "",
    ]


REPLICATION = "replication.md"
"""`quality --replicate`'s page, written into both folders of the pair (`quality_replicate`)."""


def evidence(s: dict) -> str:
    """What kind of evidence the study is: trained at one commit or several, seeds added in looks
    or fixed in advance, replicated on other seeds or not. Where it is not all three (a
    one-commit study with looks and its replication), says that such verdicts are not known
    from it, and why."""
    env, cfg, looks = s["env"], s["cfg"], s["looks"]
    at = trained_at(env, s["tables"]["runs"])
    one = one_commit(at)
    seeds = len(set(s["summary"]["seed"])) if len(s["summary"]) else 0
    sequential_ = bool(cfg.sequential and looks)
    parts = [
        f"trained at one commit, {at[0]}" if one else f"its runs trained at {joined(at)}",
        f"seeds added in looks, at {', '.join(map(str, looks))} of a cap of {cfg.max_seeds}"
        if sequential_
        else f"{seeds} seeds, without looks",
    ]
    if s["replica"] is not None:
        name, theirs = s["replica"]
        rows = replication.table({m: v.verdict for m, v in s["verdicts"].items()}, theirs)
        clash = [r["mode"] for r in rows if r["agreement"] == replication.CONTRADICT]
        parts.append(
            f"replicated on other seeds (`{name}`, {REPLICATION}): {len(clash)} of {len(rows)} "
            f"verdicts contradicted{f' ({joined(clash)})' if clash else ''}"
        )
    else:
        parts.append("no replication on other seeds")
    has_no = [
        *([] if sequential_ else ["looks"]),
        *([] if s["replica"] is not None else ["replication"]),
    ]
    lacks = [
        *([] if one else ["its runs are of more than one commit"]),
        *(
            [
                f"it has no {has_no[0]}"
                if len(has_no) == 1
                else "it has neither looks nor a replication"
            ]
            if has_no
            else []
        ),
    ]
    tail = (
        f" The verdicts of a one-commit study with looks and its replication: not known from "
        f"it, as {', and '.join(lacks)}."
        if lacks
        else ""
    )
    return f"**The study**: {'; '.join(parts)}.{tail}"


def reruns(s: dict) -> list[str]:
    """What the rerun check measured: each mode's seed retrained at other code, its two best
    held-out losses, and the tolerance (z × √2 × the mode's seed SD, `quality_commit`)."""
    rows = s["env"].get("reruns", [])
    if not rows:
        return []
    each = [
        f"{r['mode']} seed {r['seed']} {number(float(r['rerun']), 4)} against "
        f"{number(float(r['stored']), 4)} stored, "
        f"{number(r['apart'], 2)} apart (tolerance {number(r['tolerance'], 2)}"
        + (f" = {r['z']:.2f} × √2 × seed SD {number(r['seed_sd'], 2)})" if "z" in r else ")")
        for r in rows
    ]
    at = joined(list(dict.fromkeys(str(r.get("commit") or "?") for r in rows)))
    return [
        f"**Rerun check** at {at}, best held-out loss: {'; '.join(each)}. A rerun is taken to "
        "land no further from its stored run than two seeds land apart (it shares the seed's "
        "weights, batches and dropout); z shares a 5% chance of a false alarm among the modes.",
        "",
    ]
