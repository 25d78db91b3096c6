"""The verdicts of a timing run: which mode is fastest or tied within noise (`fastest`), when
GradScaler's cost may be stated (`scaler_cost`), and that a float8 mode converting no Linear
is `unsupported` (`float8_as_unsupported`). docs/criteria.md states the rules. Pandas only."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import pandas as pd

from bench.ground import catalog
from bench.plan.float8_plan import (  # noqa: F401  (the names publishing reads here)
    CONVERTED,
    NO_LINEAR,
    WHOLE_PLAN_UP_TO,
    float8_unsupported_reason,
    plan_of,
    plan_summary,
)
from bench.store.run_env import RunEnv

# ---- fastest ----------------------------------------------------------------------------

P10_P90 = "p10–p90"
IQR_HALF = "median ± IQR/2"
MEDIAN = "median"


class Interval(NamedTuple):
    """The span of a row's step times that a verdict compares, in ms."""

    lo: float
    hi: float
    spread: str
    """What the bounds are: `P10_P90`, `IQR_HALF` (a row without p10/p90) or `MEDIAN` (a row
    without either: no spread to compare)."""


def _number(row: pd.Series, key: str) -> float:
    value = row.get(key)
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def interval(row: pd.Series) -> Interval:
    """p10 to p90 of a row's step times (`total_ms_p10`, `total_ms_p90`); for a row without
    them, its median ± half its IQR; without either, its median alone."""
    median = _number(row, "total_ms")
    p10, p90 = _number(row, "total_ms_p10"), _number(row, "total_ms_p90")
    if not (math.isnan(p10) or math.isnan(p90)):
        return Interval(p10, p90, P10_P90)
    iqr = _number(row, "total_ms_iqr")
    if not math.isnan(iqr):
        return Interval(median - iqr / 2, median + iqr / 2, IQR_HALF)
    return Interval(median, median, MEDIAN)


def overlap(a: pd.Series, b: pd.Series) -> bool:
    """Whether two rows' intervals overlap: which of them is faster is inside the noise."""
    x, y = interval(a), interval(b)
    return x.lo <= y.hi and y.lo <= x.hi


def noisy(row: pd.Series) -> bool:
    """The row's `noisy` flag (its IQR over 5% of its median); False where the row lacks it."""
    flag = row.get("noisy")
    return bool(flag) if pd.notna(flag) else False


def _spread_words(spans: list[Interval]) -> str:
    """What the compared intervals are, in words: `p10–p90`, with the fallbacks where used."""
    kinds = {s.spread for s in spans}
    if kinds == {P10_P90}:
        return P10_P90
    if kinds == {IQR_HALF}:
        return f"{IQR_HALF} (no p10/p90 recorded)"
    if kinds == {MEDIAN}:
        return "medians (no spread recorded)"
    words = [P10_P90] if P10_P90 in kinds else []
    if IQR_HALF in kinds:
        words.append(f"{IQR_HALF} where a row has no p10/p90")
    if MEDIAN in kinds:
        words.append("the median where a row has no spread")
    return ", or ".join(words)


@dataclass(frozen=True, eq=False)  # eq=False: a DataFrame has no truth value to compare by
class Fastest:
    """The fastest of some rows, as far as their noise lets one say (`fastest`)."""

    rows: pd.DataFrame
    """The fastest row alone, or every row tied with it within noise; lowest median first."""
    tie: bool
    """Whether the rows are tied within noise (more than one is named)."""
    reason: str
    """Why, in one line: the intervals apart, or what ties them."""

    @property
    def first(self) -> pd.Series:
        """The row of the lowest median: the fastest, where there is no tie."""
        return self.rows.iloc[0]

    @property
    def modes(self) -> tuple[str, ...]:
        """The modes named, lowest median first, each once."""
        return tuple(dict.fromkeys(self.rows["mode"]))


def fastest(rows: pd.DataFrame) -> Fastest:
    """The fastest of `rows` (the candidates: rows that passed, of one batch size, say), by
    median step time (`total_ms`), alone only where its interval does not overlap the
    runner-up's and it is not `noisy`; else every row tied with it within noise (`Fastest`)."""
    ranked = rows[pd.to_numeric(rows["total_ms"], errors="coerce").notna()]
    ranked = ranked.sort_values("total_ms", kind="stable")
    if ranked.empty:
        raise ValueError("fastest: no row has a step time (total_ms) to compare")
    if len(ranked) == 1:
        return Fastest(ranked, False, "the only row")
    spans = [interval(row) for _, row in ranked.iterrows()]
    lo, hi = spans[0].lo, spans[0].hi
    overlapping = [s.lo <= hi and lo <= s.hi for s in spans]
    first_noisy = noisy(ranked.iloc[0])
    tied = [o or (i == 1 and first_noisy) for i, o in enumerate(overlapping)]
    if sum(tied) == 1:
        runner = spans[1]
        return Fastest(
            ranked.head(1),
            False,
            f"its {_spread_words(spans[:2])} ({lo:.3g}–{hi:.3g} ms) clears the runner-up's "
            f"({runner.lo:.3g}–{runner.hi:.3g} ms)",
        )
    why = []
    if sum(overlapping) > 1:
        why.append(f"{_spread_words([s for s, t in zip(spans, tied, strict=True) if t])} overlap")
    if first_noisy:
        median = float(ranked.iloc[0]["total_ms"])
        spread = _number(ranked.iloc[0], "total_ms_iqr") / median
        share = f": IQR {spread:.1%} of its median" if not math.isnan(spread) else ""
        why.append(f"the fastest is noisy{share}")
    return Fastest(ranked[tied], True, "; ".join(why))


# ---- GradScaler's cost ------------------------------------------------------------------


def scaler_cost_reason(env: RunEnv, rows: pd.DataFrame) -> str | None:
    """Why GradScaler's cost may not be read off `rows` (fp16's rows with and without it) of the
    folder whose env.json is `env`, or None where it may: both timed interleaved by one process.
    Only a timing run's rounds interleave (`run --rounds N`, N > 1); a numerics study, a run of
    several ranks or of one round timed the two cases once each, seconds apart."""
    kind = env.get("kind")
    if kind not in (None, "timing"):
        return f"these are a {kind} folder's step times, not a timing run's interleaved rounds"
    config = env.get("config") or {}
    ranks = [int(config.get("world_size") or 1)]
    if "world_size" in rows:
        ranks += [int(w) for w in rows["world_size"].dropna()]
    parallel = set(rows["parallel"].dropna()) if "parallel" in rows else set()
    if max(ranks) > 1 or parallel - {"none"}:
        return "a run of several ranks times each case once, not interleaved"
    rounds = int(config.get("rounds") or 1)
    by_row = pd.to_numeric(rows["rounds"], errors="coerce") if "rounds" in rows else None
    if rounds > 1 and by_row is not None and by_row.notna().all() and (by_row > 1).all():
        return None
    return "each case was timed once (`--rounds 1`), not interleaved"


RUN_RATIO_SPAN = (0.9674, 1.024)
"""What one case's step time in one run over its time in another run of the same grid spans,
5th to 95th percentile over 156 cases on one H200 (results/sessions/default_vs_record.txt: the
default grid at 062f3e4 and at e5180fb). Two cases that one run timed once each differ by at
least this much before one run may say which is faster: inside it, the difference is of the
size of what moves between two processes."""

SLOWER, FASTER, TIED, NOT_KNOWN = "slower", "faster", "tied within noise", "not known"


class Cost(NamedTuple):
    """GradScaler's cost at one case: `verdict` on fp16 with it against fp16 without."""

    verdict: str
    ratio: float
    """The medians' ratio, with over without (above 1: GradScaler lengthens the step)."""
    lo: float
    hi: float
    """The ratio's span over the two rows' p10–p90: with's p10 over without's p90, with's p90
    over without's p10."""
    why: str


def scaler_cost(scaled: pd.Series, bare: pd.Series, *, interleaved: bool) -> Cost:
    """fp16 with GradScaler (`scaled`) against fp16 without (`bare`) at one case. `slower` or
    `faster` where the two rows' p10–p90 do not overlap and either the run interleaved them in
    rounds (`scaler_cost_reason` is None) or their ratio lies outside `RUN_RATIO_SPAN`; `tied
    within noise` where the intervals overlap; `not known` otherwise, and for rows timed before
    GradScaler's skipped steps were left out (no `skipped_steps`: such steps may be among their
    samples, and they decide a p10), with why."""
    ratio = _number(scaled, "total_ms") / _number(bare, "total_ms")
    x, y = interval(scaled), interval(bare)
    lo, hi = x.lo / y.hi, x.hi / y.lo
    if any(math.isnan(_number(r, "skipped_steps")) for r in (scaled, bare)):
        why = "timed before GradScaler's skipped steps were counted and left out"
        return Cost(NOT_KNOWN, ratio, lo, hi, why)
    if overlap(scaled, bare):
        return Cost(TIED, ratio, lo, hi, f"their {x.spread} overlap")
    low, high = RUN_RATIO_SPAN
    if not interleaved and low <= ratio <= high:
        why = f"one run, and within {low:.4g}–{high:.4g}, what two runs of one grid differ by"
        return Cost(NOT_KNOWN, ratio, lo, hi, why)
    why = (
        "interleaved rounds, their p10–p90 apart"
        if interleaved
        else f"their p10–p90 apart, and beyond {low:.4g}–{high:.4g}, what two runs differ by"
    )
    return Cost(SLOWER if ratio > 1 else FASTER, ratio, lo, hi, why)


# ---- float8 that converts no Linear -----------------------------------------------------

FLOAT8 = frozenset(name for name, c in catalog.CARDS.items() if c.kind == "float8")


def converts_nothing(row: pd.Series) -> bool:
    """Whether a float8 row's mode converted no Linear: its `fp8_linears` lists none converted,
    or, for a row that did not pass, its reason says so. False where the row does not say."""
    if row.get("mode") not in FLOAT8:
        return False
    if row.get("status") == "ok":
        plan = plan_of(row.get("fp8_linears"))
        return bool(plan) and CONVERTED not in plan.values()
    error = row.get("error")
    return isinstance(error, str) and bool(NO_LINEAR.search(error))


def float8_as_unsupported(rows: pd.DataFrame) -> pd.DataFrame:
    """`rows` with every `ok` float8 row that converted no Linear (a folder written before such
    a case was `unsupported`: its row timed its autocast mode's step) made `unsupported`, with
    the reason a new case of it gets. Every other row as it was; `rows` itself unchanged."""
    if rows.empty or not {"mode", "status", "fp8_linears"} <= set(rows.columns):
        return rows
    ran = rows["status"] == "ok"
    mask = ran & rows.apply(converts_nothing, axis=1).astype(bool)
    if not mask.any():
        return rows
    out = rows.copy()
    if "error" not in out:
        out["error"] = ""
    out["error"] = out["error"].astype(object)
    for i in out.index[mask]:
        row = out.loc[i]
        model = str(row.get("model", "this model"))
        why = float8_unsupported_reason(plan_of(row["fp8_linears"]), model)
        out.loc[i, ["status", "error"]] = ["unsupported", f"{row['mode']}: {why}"]
    return out


# ---- which rows a run's findings set against each other ---------------------------------


def contenders(df: pd.DataFrame) -> pd.DataFrame:
    """The rows that may win a speed table: passed, not recompiled during timing (such a window
    did not time the compiled step alone), and not a float8 mode that converted no Linear (an
    older folder's `ok` row of bf16 autocast's step under a float8 name,
    `float8_as_unsupported`)."""
    ok = float8_as_unsupported(df)
    ok = ok[ok["status"] == "ok"]
    if "recompiled" in ok:
        ok = ok[~ok["recompiled"].fillna(False).astype(bool)]
    return ok


def float8_unconverted(df: pd.DataFrame) -> list[str]:
    """The float8 modes of a run whose rows say they convert no Linear of its model
    (`converts_nothing`): `unsupported`, never set against anything."""
    if df.empty or "mode" not in df:
        return []
    nothing = df[df.apply(converts_nothing, axis=1).astype(bool)]
    return list(dict.fromkeys(nothing["mode"]))


def float8_against_headline(ok: pd.DataFrame) -> list[tuple[int, pd.Series, list[pd.Series]]]:
    """Per batch size where the headline mode passed: (batch size, its fastest row, the fastest
    row of each float8 mode that passed there)."""
    head = catalog.headline()
    out = []
    for bs, g in ok.groupby("batch_size", sort=True):
        base = g[g["mode"] == head]
        if base.empty:
            continue
        best = [
            g.loc[g.loc[g["mode"] == m, "total_ms"].idxmin()]
            for m in sorted(FLOAT8, key=list(catalog.CARDS).index)
            if m in set(g["mode"])
        ]
        if best:
            out.append((int(bs), base.loc[base["total_ms"].idxmin()], best))
    return out


def float8_not_paying(base: pd.Series, rows: list[pd.Series]) -> list[str]:
    """The float8 modes of `rows` slower than the headline mode's fastest row `base` outside
    the noise (`overlap`): their speed over it, to the 4 significant digits a report shows, is
    below 1."""
    return [
        r["mode"]
        for r in rows
        if float(f"{base['total_ms'] / r['total_ms']:.4g}") < 1 and not overlap(base, r)
    ]
