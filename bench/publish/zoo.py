"""Which recipe for which model: one row per model of a model-zoo run (a timing run per model,
and the numerics study of the same model and preset where there is one), for README.md's
`ampbench:zoo` block.

Per model, at its largest batch size measured, with the given Adam:
- the fastest recipe (mode and variant) and, where a study trained the modes, the fastest that
  trains like fp32 (`bench.publish.summary_studies.trains_like_fp32`: every seed within the
  Answer's loss gap of fp32's worst, no divergence; fp16 without a scaler only where the
  study's census shows the scaler not needed); each `tied: ...` where recipes are tied within
  noise (`bench.verdicts.timing.fastest`), every one named;
- that recipe's speedup over fp32 and over TF32 at the same variant, and its peak memory;
- whether float8 pays: the fastest float8 row against the fastest bf16-amp row, `within noise`
  where their intervals overlap; `unsupported: converts no Linear` where no float8 recipe
  converts a Linear of the model (`bench.verdicts.timing.converts_nothing`);
- whether fp16 needs GradScaler, by the study's measurements (`scaler_needed`), with the worst
  share of a gradient that fp16 without a scaler flushed to zero.

A cell the folders cannot fill is `–`, and a note under the table says why. Pure: pandas only.
"""

from __future__ import annotations

import math

import pandas as pd

from bench.publish.prose import figure
from bench.publish.summary import passing
from bench.publish.summary_studies import scaler_needed, trains_like_fp32
from bench.recipes import catalog
from bench.verdicts import timing
from bench.verdicts.timing import Fastest

NO_STUDY = "no numerics study of this model and preset"
COLUMNS = (
    "model",
    "batch",
    "fastest",
    "fastest that trains like fp32",
    "× fp32",
    "× TF32",
    "peak GiB",
    "float8",
    "fp16 without GradScaler",
)
STUDY_COLUMNS = ("fastest that trains like fp32", "fp16 without GradScaler")
"""The columns only a numerics study of the model can fill."""


def _recipe(row: pd.Series) -> str:
    return f"{row['mode']} ({row['variant']}, {figure(row['total_ms'])} ms)"


def _named(fastest: Fastest) -> str:
    """The fastest recipe; where its other variants are tied with it within noise, they are
    named; where other modes are, `tied: a (compile, 2.0 ms), b (...)`, each mode at its
    fastest variant (which recipe to use is the table's question)."""
    if len(fastest.modes) == 1:
        others = [str(v) for v in fastest.rows["variant"].iloc[1:]]
        if not others:
            return _recipe(fastest.first)
        first = fastest.first
        return (
            f"{first['mode']} ({first['variant']}, {figure(first['total_ms'])} ms; "
            f"{' and '.join(others)} tied)"
        )
    per_mode = fastest.rows.drop_duplicates("mode")
    return "tied: " + ", ".join(_recipe(r) for _, r in per_mode.iterrows())


def _speedup(at: pd.DataFrame, row: pd.Series, mode: str) -> str:
    base = at[(at["mode"] == mode) & (at["variant"] == row["variant"])]
    return figure(base["total_ms"].iloc[0] / row["total_ms"]) if len(base) else "–"


def _float8(at: pd.DataFrame, rows: pd.DataFrame) -> str:
    """Whether float8 pays: the fastest float8 row of `at` (the rows that passed) against the
    fastest bf16-amp row, `within noise` where their intervals overlap; where none passed, why
    not, from `rows` (every row at that batch size)."""
    fp8 = at[at["mode"].isin(timing.FLOAT8)]
    if fp8.empty:
        tried = rows[rows["mode"].isin(timing.FLOAT8)]
        if tried.empty:
            return "–"
        if tried.apply(timing.converts_nothing, axis=1).all():
            return "unsupported: converts no Linear"
        return ", ".join(dict.fromkeys(tried["status"]))
    bf16 = at[at["mode"] == "bf16-amp"]
    if bf16.empty:
        return "–"
    best = fp8.loc[fp8["total_ms"].idxmin()]
    base = bf16.loc[bf16["total_ms"].idxmin()]
    ratio = base["total_ms"] / best["total_ms"]
    if timing.overlap(base, best):
        verdict = "within noise"
    else:
        verdict = "pays" if ratio > 1 else "does not pay"
    return f"{verdict}: {best['mode']} {figure(ratio)}× bf16-amp"


def _scaler(studies: list[dict], needed: bool | None) -> str:
    """The GradScaler cell, from the studies' verdict (`scaler_needed`)."""
    if needed is None:
        return "–"
    _, bare = catalog.fp16_pair()
    censuses = [s["census"] for s in studies if len(s["census"])]
    if not censuses:
        # Training alone can show the scaler needed (a run diverged or ended worse), never that
        # it is not: that takes the census, as the study's own Answer says.
        failed = any((s["failed"]["kind"] == "census").any() for s in studies)
        why = "its census failed" if failed else "no census"
        if needed:
            return f"needed (by training; {why})"
        return f"not known ({why})"
    census = pd.concat(censuses, ignore_index=True)
    flushed = census.loc[census["mode"] == bare, "flushed"].max()
    worst = f"{flushed:.1%} of a gradient flushed" if not math.isnan(flushed) else "no census"
    return f"{'needed' if needed else 'not needed'} ({worst})"


def model_row(rows: pd.DataFrame, studies: list[dict], optimizer: str) -> dict:
    """The table's row of one model: its timing run's rows and its studies."""
    model = str(rows["model"].iloc[0])
    preset = str(rows["preset"].iloc[0]) if "preset" in rows else ""
    row = dict.fromkeys(COLUMNS, "–")
    row["model"] = f"`{model}` ({preset})" if preset else f"`{model}`"
    rows = timing.float8_as_unsupported(rows)
    ok = passing(rows, optimizer)
    if ok.empty:
        return row
    bs = int(ok["batch_size"].max())
    at = ok[ok["batch_size"] == bs].sort_values("total_ms")
    row["batch"] = str(bs)
    fastest = timing.fastest(at)
    row["fastest"] = _named(fastest)
    chosen = None
    needed = scaler_needed(studies)
    if studies:
        # fp16 without a scaler can end a short study like fp32 and still flush gradients to
        # zero: unless the study's census shows the scaler not needed, it is not a recipe to
        # recommend.
        _, bare = catalog.fp16_pair()
        shown_safe = needed is False and any(len(s["census"]) for s in studies)
        unsafe = set() if shown_safe else {bare}
        safe = at[[m not in unsafe and bool(trains_like_fp32(studies, m)) for m in at["mode"]]]
        chosen = timing.fastest(safe) if len(safe) else None
        named = _named(chosen) if chosen is not None else "none"
        row["fastest that trains like fp32"] = "same" if named == row["fastest"] else named
    shown = (chosen or fastest).first
    row["× fp32"] = _speedup(at, shown, catalog.reference())
    row["× TF32"] = _speedup(at, shown, "tf32")
    row["peak GiB"] = figure(shown["peak_alloc_gib"])
    row["float8"] = _float8(at, rows[rows["batch_size"] == bs])
    row["fp16 without GradScaler"] = _scaler(studies, needed)
    return row


def studies_of(rows: pd.DataFrame, studies: list[dict]) -> list[dict]:
    """The studies (`bench.numerics.measure.tables.load`) of a run's model and preset."""
    model = str(rows["model"].iloc[0])
    preset = str(rows["preset"].iloc[0]) if "preset" in rows else ""
    return [
        s
        for s in studies
        if s["env"].get("numerics_config", {}).get("model") == model
        and s["env"]["numerics_config"].get("preset") == preset
    ]


def table(
    models: list[tuple[pd.DataFrame, list[dict]]],
    optimizer: str,
    expected: list[int | None] | None = None,
) -> list[str]:
    """The markdown table, one row per (rows, studies), and its notes; `expected` gives each
    timing run's number of cases (env.json's `expected_cases`), so that a run that stopped early
    says so under the table instead of passing for a whole grid."""
    df = pd.DataFrame([model_row(r, s, optimizer) for r, s in models], columns=COLUMNS)
    counts = expected or [None] * len(models)
    stopped = [
        f"{row}: its run stopped early, with {len(rows)} of its {n} cases measured; its row "
        "compares those alone"
        for row, (rows, _), n in zip(df["model"], models, counts, strict=True)
        if n and len(rows) < n
    ]
    study_columns = " and ".join(f'"{c}"' for c in STUDY_COLUMNS)
    notes = [
        f"Preset in brackets; {optimizer} Adam; each model at its largest batch measured. "
        "tied: within noise (p10–p90), each mode at its fastest variant. × fp32, × TF32 and "
        "peak GiB: of the (first) fastest recipe that trains like fp32, else of the fastest, "
        "against fp32 and TF32 at its variant.",
        "fp16 without GradScaler: the study's verdict and the largest share of a gradient it "
        "flushed to zero; unless its census shows the scaler not needed, fp16 without it does "
        "not count as training like fp32.",
    ]
    if any(not s for _, s in models):
        notes.append(f"`–` in {study_columns}: {NO_STUDY} yet.")
    if stopped:
        notes.append("; ".join(stopped) + ".")
    # Cells unpadded: a column as wide as its longest list of tied recipes, repeated on every
    # row, would double the README (tests/test_readme.py holds it to a size).
    lines = ["| " + " | ".join(cells) + " |" for cells in [COLUMNS, *df.values]]
    lines.insert(1, "|" + "---|" * len(COLUMNS))
    return ["\n".join(lines), "", " ".join(notes)]
