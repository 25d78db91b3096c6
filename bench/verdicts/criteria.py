"""Checking a run against the user's own expectations (`ampbench check RUN --criteria FILE`): each
criterion of a criteria file (`bench.verdicts.criteria_file`) evaluated on a run's rows and
env.json, one PASS, FAIL or SKIP line each."""

from __future__ import annotations

import difflib
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from bench.store import results
from bench.store.run_env import RunEnv
from bench.text.tables import cell
from bench.verdicts.criteria_file import CriteriaError, Criterion, read

SHOWN_ROWS = 6
"""Rows a line lists before it says how many more there are."""


@dataclass(frozen=True)
class Outcome:
    """One criterion's verdict (`PASS`, `FAIL` or `SKIP`) and the measured values behind it."""

    name: str
    verdict: str
    detail: str

    def line(self) -> str:
        return f"{self.verdict} {self.name}: {self.detail}"


@dataclass
class Checked:
    """Every criterion's outcome, in file order."""

    outcomes: list[Outcome] = field(default_factory=list)

    def count(self, verdict: str) -> int:
        return sum(o.verdict == verdict for o in self.outcomes)

    @property
    def failed(self) -> bool:
        return self.count("FAIL") > 0

    def render(self) -> str:
        summary = f"{self.count('PASS')} passed, {self.count('FAIL')} failed"
        if self.count("SKIP"):
            summary += f", {self.count('SKIP')} skipped"
        return "\n".join([*(o.line() for o in self.outcomes), summary])


def check(criteria: list[Criterion], df: pd.DataFrame, env: RunEnv) -> Checked:
    """Every criterion's outcome against a run's rows and env.json. Each is evaluated even where
    its GPU differs (a bad expression is named whatever the run), then skipped there."""
    checked = Checked()
    if "sizes" in df.columns:  # as results.csv and a case id spell them: `sizes == '8x16x3'`
        df = df.assign(sizes=df["sizes"].astype(str))
    for c in criteria:
        if c.comparison:
            why = "judges a comparison (ampbench ab or compare --criteria FILE)"
            checked.outcomes.append(Outcome(c.name, "SKIP", why))
            continue
        if c.env is not None:
            outcome = _judge_env(c, env)
        elif c.ratio is not None:
            outcome = _judge_ratio(c, df)
        else:
            outcome = _judge_rows(c, df)
        checked.outcomes.append(outcome if c.applies_to(env) else _other_gpu(c, env))
    return checked


def check_comparison(criteria: list[Criterion], table: pd.DataFrame, env: RunEnv) -> Checked:
    """Every comparison criterion's outcome against a comparison's rows (`env`: B's); a case's
    status is `ok` when it passed on both sides, else both sides' (`oom/ok`)."""
    frame = table.copy()
    if {"status_a", "status_b"} <= set(frame.columns):
        both = frame["status_a"].astype(str) + "/" + frame["status_b"].astype(str)
        frame["status"] = both.where(both != "ok/ok", "ok")
    else:
        frame["status"] = "ok"
    if "case_id" not in frame.columns and "benchmark" in frame.columns:
        frame["case_id"] = frame["benchmark"]
    checked = Checked()
    for c in criteria:
        if not c.comparison:
            checked.outcomes.append(Outcome(c.name, "SKIP", "judges a run (ampbench check)"))
        elif not c.applies_to(env):
            checked.outcomes.append(_other_gpu(c, env))
        else:
            checked.outcomes.append(_judge_rows(c, frame))
    return checked


def _other_gpu(c: Criterion, env: RunEnv) -> Outcome:
    device = env.get("gpu") or env.get("device") or "an unnamed device"
    return Outcome(c.name, "SKIP", f"run on {device}, criterion is for {c.gpu}")


def check_folder(run_dir: Path, criteria_path: Path) -> Checked:
    """`check` of a criteria file against a run folder's rows and env.json."""
    criteria = read(criteria_path)
    return check(criteria, results.load(run_dir), results.read_env(run_dir))


# --- evaluating expressions -------------------------------------------------------------------


_BAD_EXPRESSION = (
    SyntaxError,
    tokenize.TokenError,
    ValueError,
    TypeError,
    KeyError,
    AttributeError,
    NotImplementedError,
)
"""What pandas raises for an expression it cannot evaluate (an unknown column is a NameError)."""


def _evaluate(c: Criterion, df: pd.DataFrame, key: str, expr: str) -> pd.Series:
    """`expr` per row of `df`, True or False, with pandas' errors as one `CriteriaError` line.

    `where` goes through `DataFrame.eval` too, not `query`: `query` takes a non-boolean result
    for index labels, so a `where` naming a number column would silently choose rows by label.
    NaN compares False, so a value that was not measured never satisfies `expect`."""
    try:
        value = df.eval(expr, engine="python")
    except NameError as exc:  # pandas' UndefinedVariableError: a column the rows do not have
        match = re.search(r"name '([^']+)' is not defined", str(exc))
        bad = match.group(1) if match else str(exc)
        raise CriteriaError(
            f"criterion {c.name!r}: unknown column {bad!r} in {key} {expr!r}{_hint(bad, df)}"
        ) from exc
    except _BAD_EXPRESSION as exc:
        reason = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise CriteriaError(
            f"criterion {c.name!r}: bad {key} expression {expr!r} ({reason})"
        ) from exc
    if pd.api.types.is_bool(value):  # an expression of no column: the same for every row
        return pd.Series(bool(value), index=df.index)
    if isinstance(value, pd.Series) and pd.api.types.is_bool_dtype(value):
        return value.fillna(False).astype(bool)
    raise CriteriaError(f"criterion {c.name!r}: {key} {expr!r} does not give True or False")


def _hint(name: str, df: pd.DataFrame) -> str:
    close = difflib.get_close_matches(name, [str(col) for col in df.columns], n=1)
    return f" (did you mean {close[0]}?)" if close else ""


def _select(c: Criterion, df: pd.DataFrame, key: str, expr: str | None) -> pd.DataFrame:
    """The rows of `df` where `expr` holds (every row for no expression)."""
    return df if expr is None else df[_evaluate(c, df, key, expr)]


def _holds(c: Criterion, df: pd.DataFrame) -> pd.Series:
    return _evaluate(c, df, "expect", c.expect)


def _names(expr: str, columns: pd.Index) -> list[str]:
    """The columns an expression names, in order (quoted strings left out)."""
    bare = re.sub(r"'[^']*'|\"[^\"]*\"", "", expr)
    found = re.findall(r"[A-Za-z_]\w*", bare)
    return list(dict.fromkeys(n for n in found if n in columns))


# --- the three kinds of criterion ---------------------------------------------------------------


def _missing(c: Criterion, why: str) -> Outcome:
    return Outcome(c.name, "SKIP" if c.if_missing == "skip" else "FAIL", why)


def _no_row(c: Criterion) -> Outcome:
    return _missing(c, f"no row matches (where {c.where})" if c.where else "the run has no rows")


def _label_axes(rows: pd.DataFrame) -> list[str]:
    """The axes that tell `rows` apart (those with more than one value among them)."""
    axes = [a for a in results.axes() if a in rows.columns]
    varying = [a for a in axes if rows[a].astype(str).nunique() > 1]
    return varying or (["case_id"] if "case_id" in rows.columns and len(rows) > 1 else [])


def _label(row: pd.Series, axes: list[str]) -> str:
    return " ".join(f"{a}={cell(row[a])}" for a in axes)


def _values(row: pd.Series, columns: list[str]) -> str:
    return ", ".join(f"{col} {cell(row[col])}" for col in columns)


def _listed(rows: pd.DataFrame, axes: list[str], show) -> str:
    """`show(row)` for each row, prefixed with its label, at most `SHOWN_ROWS` of them."""
    parts = [" ".join(filter(None, (_label(r, axes), show(r)))) for _, r in rows.iterrows()]
    more = len(parts) - SHOWN_ROWS
    return "; ".join(parts[:SHOWN_ROWS]) + (f"; and {more} more" if more > 0 else "")


def _judge_rows(c: Criterion, df: pd.DataFrame) -> Outcome:
    chosen = _select(c, df, "where", c.where)
    held = _holds(c, chosen)  # also on no rows: a bad expect is named whatever the run holds
    if chosen.empty:
        return _no_row(c)
    axes = _label_axes(chosen)
    bad = chosen[chosen["status"] != "ok"]
    if not bad.empty:
        listed = _listed(bad, axes, lambda r: f"status {r['status']}")
        count = f"{len(bad)} of {len(chosen)} rows not ok: " if len(chosen) > 1 else ""
        return Outcome(c.name, "FAIL", f"{count}{listed}")
    if c.require == "all":
        passed = bool(held.all())
        deciding = chosen if passed else chosen[~held]
    else:
        passed = bool(held.any())
        deciding = chosen[held] if passed else chosen
    columns = _names(c.expect, chosen.columns)
    listed = _listed(deciding, axes, lambda r: _values(r, columns))
    if len(chosen) > 1 and not passed and c.require == "all":
        listed = f"{len(deciding)} of {len(chosen)} rows miss: {listed}"
    suffix = ""
    if len(chosen) > 1:
        suffix = " in every row" if c.require == "all" else " in some row"
    verdict = "PASS" if passed else "FAIL"
    return Outcome(
        c.name, verdict, f"{listed or f'{len(chosen)} rows'} (expect {c.expect}{suffix})"
    )


def _judge_ratio(c: Criterion, df: pd.DataFrame) -> Outcome:
    ratio = c.ratio
    assert ratio is not None
    if ratio.column not in df.columns:
        hint = _hint(ratio.column, df)
        raise CriteriaError(f"criterion {c.name!r}: unknown column {ratio.column!r} in ratio{hint}")
    if not pd.api.types.is_numeric_dtype(df[ratio.column]):
        raise CriteriaError(f"criterion {c.name!r}: ratio column {ratio.column!r} is not a number")
    base = _select(c, df, "where", c.where)
    sides = {
        side: _select(c, base, f"ratio.{side}", getattr(ratio, side))
        for side in ("numerator", "denominator")
    }
    _holds(c, pd.DataFrame({"ratio": pd.Series([], dtype=float)}))  # a bad expect, named now
    if base.empty:
        return _no_row(c)
    axes = _label_axes(pd.concat(list(sides.values())))
    values, shown = [], []
    for side, rows in sides.items():
        if rows.empty:
            return _missing(c, f"no row matches the {side} ({getattr(ratio, side)})")
        bad = rows[rows["status"] != "ok"]
        if not bad.empty:
            listed = _listed(bad, axes, lambda r: f"status {r['status']}")
            return Outcome(c.name, "FAIL", f"{side}: {listed}")
        column = rows[ratio.column].astype(float)
        if ratio.reduce is None and len(rows) > 1:
            return Outcome(
                c.name, "FAIL", f"the {side} matches {len(rows)} rows; give ratio.reduce"
            )
        if ratio.reduce in (None, "min", "max"):  # one row's value: say which row
            row = rows.iloc[0]
            if len(rows) > 1 and column.notna().any():
                row = rows.loc[column.idxmax() if ratio.reduce == "max" else column.idxmin()]
            values.append(float(row[ratio.column]))
            label = _label(row, axes)
            shown.append(cell(values[-1]) + (f" ({label})" if label else ""))
        else:
            values.append(float(getattr(column, ratio.reduce)()))
            shown.append(f"{cell(values[-1])} ({ratio.reduce} of {len(rows)} rows)")
    value = values[0] / values[1] if values[1] else float("nan")
    passed = bool(_holds(c, pd.DataFrame({"ratio": [value]})).iloc[0])
    detail = f"ratio {cell(value)} = {ratio.column} {shown[0]} / {shown[1]} (expect {c.expect})"
    return Outcome(c.name, "PASS" if passed else "FAIL", detail)


def _env_rows(c: Criterion, env: RunEnv) -> tuple[pd.DataFrame, list[str]]:
    """The values at `c.env`'s dotted path as rows of one column named by its last key (a list
    on the way gives a row per entry, by `case_id`), and why the entries that lack it have none."""
    keys = str(c.env).split(".")
    # A plain dict: a path the criteria file names that env.json lacks is "not measured".
    nodes: list[tuple[object, object]] = [(dict(env), None)]  # (value, label)
    missing: list[tuple[object, str | None]] = []  # (label, the error it records)
    for depth, key in enumerate(keys):
        found = []
        for node, label in nodes:
            entries = node if isinstance(node, list) else [node]
            for entry in entries:
                here = entry.get("case_id", label) if isinstance(entry, dict) else label
                if isinstance(entry, dict) and key in entry:
                    found.append((entry[key], here))
                    continue
                error = entry.get("error") if isinstance(entry, dict) else None
                place = ".".join(keys[:depth]) or "env.json"
                missing.append((here, f"{place}: {error}" if error else None))
        nodes = found
    if any(isinstance(value, (dict, list)) for value, _ in nodes):
        raise CriteriaError(
            f"criterion {c.name!r}: env {c.env!r} is not a single value in env.json"
        )
    rows = [{"case_id": label, "status": "ok", keys[-1]: value} for value, label in nodes]
    rows += [
        {"case_id": label, "status": f"not measured ({why})" if why else "not measured"}
        for label, why in missing
    ]
    whys = list(dict.fromkeys(why for _, why in missing if why))
    return pd.DataFrame(rows, columns=["case_id", "status", keys[-1]]), whys


def _judge_env(c: Criterion, env: RunEnv) -> Outcome:
    frame, whys = _env_rows(c, env)
    if (frame["status"] != "ok").all():  # nothing measured: nothing to judge
        _holds(c, frame.iloc[:0].astype({frame.columns[-1]: float}))  # a bad expect, named
        reason = f" ({'; '.join(whys)})" if whys else ""
        return _missing(c, f"env.json has no {c.env}{reason}")
    if frame["case_id"].isna().all():  # one value, not a list's entries: no label
        frame = frame.drop(columns="case_id")
    return _judge_rows(c, frame)
