"""Which mode for which model (the README's `ampbench:zoo` block): a row per model at its largest
batch size: its fastest mode, the fastest that trains like fp32, speedups, memory, whether
float8 pays, whether fp16 needs GradScaler (docs/zoo.md). A cell left `–` has a note."""

from __future__ import annotations

import re

import pandas as pd

from bench.ground import catalog
from bench.publish.summary import passing
from bench.text.tables import figure
from bench.verdicts import timing, training
from bench.verdicts.timing import Fastest

NOT_KNOWN = "not known"
NO_STUDY = (
    "no time-to-quality study on real data of this model at this preset and batch size (its "
    "numerics study trains one seed on a synthetic task, which cannot decide: docs/quality.md)"
)
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
ONLY_FP32 = (
    "its study shows no mode but fp32 to train like fp32, and does not show the others to "
    "train worse (their intervals reach past the margin: the study's report)"
)
STEP_NOTE = "step note"
"""A row's note on the study's step times, where they order modes otherwise (not a column)."""
NOTE = "note"
"""A row's own note under the table (not a column)."""
STUDY_COLUMNS = ("fastest that trains like fp32", "fp16 without GradScaler")
"""The columns only a time-to-quality study of the model can fill."""


def label(model: str, preset: str) -> str:
    """How the table and its From line name a model: `hf:llama` (small)."""
    return f"`{model}` ({preset})" if preset else f"`{model}`"


def _model(rows: pd.DataFrame) -> tuple[str, str]:
    """(model, preset) of a timing run's rows; an own loop's rows have no preset."""
    return str(rows["model"].iloc[0]), str(rows["preset"].iloc[0]) if "preset" in rows else ""


def _pick(row: pd.Series) -> str:
    return f"{row['mode']} ({row['variant']}, {figure(row['total_ms'])} ms)"


def _named(fastest: Fastest) -> str:
    """The fastest mode with the variants tied with it; where modes are tied,
    `tied: a (compile, 2.0 ms), b (...)`, each at its fastest variant."""
    if len(fastest.modes) == 1:
        others = [str(v) for v in fastest.rows["variant"].iloc[1:]]
        if not others:
            return _pick(fastest.first)
        first = fastest.first
        return (
            f"{first['mode']} ({first['variant']}, {figure(first['total_ms'])} ms; "
            f"{' and '.join(others)} tied)"
        )
    per_mode = fastest.rows.drop_duplicates("mode")
    return "tied: " + ", ".join(_pick(r) for _, r in per_mode.iterrows())


def _speedup(at: pd.DataFrame, row: pd.Series, mode: str) -> str:
    base = at[(at["mode"] == mode) & (at["variant"] == row["variant"])]
    return figure(base["total_ms"].iloc[0] / row["total_ms"]) if len(base) else "–"


def _float8(at: pd.DataFrame, rows: pd.DataFrame) -> str:
    """Whether float8 pays: the fastest float8 row of `at` against the fastest bf16-amp row
    (`within noise` where they overlap); where none passed, why not, from `rows`."""
    fp8 = at[at["mode"].isin(timing.FLOAT8)]
    if fp8.empty:
        tried = rows[rows["mode"].isin(timing.FLOAT8)]
        if tried.empty:
            return "–"
        if tried.apply(timing.converts_nothing, axis=1).all():
            return "unsupported: converts no Linear"
        return ", ".join(dict.fromkeys(tried["status"]))
    bf16_amp = catalog.autocast_of("bfloat16")
    bf16 = at[at["mode"] == bf16_amp]
    if bf16.empty:
        return "–"
    best = fp8.loc[fp8["total_ms"].idxmin()]
    base = bf16.loc[bf16["total_ms"].idxmin()]
    ratio = base["total_ms"] / best["total_ms"]
    rounds = pd.to_numeric(at["rounds"], errors="coerce") if "rounds" in at else None
    if rounds is None or not (rounds.fillna(1) > 1).all():
        # One process, one round: a ratio of two rows timed minutes apart, which the rounds
        # engine (`run --rounds N`) would have to decide.
        verdict = "one round: not decided"
    elif timing.overlap(base, best):
        verdict = "within noise"
    else:
        verdict = "pays" if ratio > 1 else "does not pay"
    return f"{verdict}: {best['mode']} {figure(ratio)}× {bf16_amp}"


def _scaler(study: dict | None) -> str:
    """The GradScaler cell, from a time-to-quality study's verdict."""
    if study is None or study["scaler"] is None:
        return NOT_KNOWN
    return study["scaler"].verdict


SIZE_FIELDS = ("vocab", "classes")
"""The sizes a timing row must share with a study's model: float16's underflow depends on them."""


def studied_at(study: dict, rows: pd.DataFrame) -> str | None:
    """`vocab 65` where the study trained the model at a size the timing rows do not have (the
    study sized it to its data), else None: the study measured the row's model."""
    size = str(study.get("env", {}).get("size", ""))
    dims = {int(v) for c in ("input_size", "hidden_size", "num_classes") if c in rows
            for v in pd.to_numeric(rows[c], errors="coerce").dropna()}  # fmt: skip
    if "sizes" in rows:  # a loaded run's sizes, `256x384x65`
        dims |= {int(d) for v in rows["sizes"].dropna() for d in re.findall(r"\d+", str(v))}
    for name in SIZE_FIELDS:
        found = re.search(rf"\b{name}=(\d+)", size)
        if found and int(found.group(1)) > 0 and int(found.group(1)) not in dims:
            return f"{name} {found.group(1)}"
    return None


def step_orders(study: dict, at: pd.DataFrame) -> list[str]:
    """The pairs of modes whose order by step time the study's own step (eager, clipped,
    unscaled: `bench.quality.render.report.step_named`) and this table's eager step reverse."""
    t = study.get("tables", {}).get("timing")
    if t is None or t.empty:
        return []
    mine = t[t["status"] == "ok"].set_index("mode")["step_ms"]
    eager = at[at["variant"] == "eager"].groupby("mode")["total_ms"].min()
    both = [m for m in mine.index if m in eager.index]
    return [
        f"{a} vs {b}"
        for i, a in enumerate(both)
        for b in both[i + 1 :]
        if (mine[a] - mine[b]) * (eager[a] - eager[b]) < 0
    ]


def model_row(rows: pd.DataFrame, studies: list[dict], optimizer: str) -> dict:
    """The table's row of one model: its timing run's rows and its time-to-quality studies."""
    row = dict.fromkeys(COLUMNS, "–")
    row["model"] = label(*_model(rows))
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
    study = next((s for s in studies if s["cfg"].batch_size == bs), None)
    row["fastest that trains like fp32"] = NOT_KNOWN
    other = studied_at(study, rows) if study is not None else None
    if other is not None:
        # A study of another size measured another model: its verdicts are not this row's.
        row["fastest that trains like fp32"] = f"{NOT_KNOWN} (studied at {other})"
        row[NOTE] = (
            f"{NOT_KNOWN} for {row['model']}: its time-to-quality study trained it at {other}, "
            "sized to the study's data, not at the row's size; float16's underflow in the "
            "logits' gradient depends on that size"
        )
        study = None
    flipped = step_orders(study, at) if study is not None else []
    if flipped:
        row[STEP_NOTE] = (
            f"{row['model']}: its time-to-quality study times its own step (gradient clipping, "
            f"unscaling, eager) and orders these pairs the other way round: {', '.join(flipped)}; "
            "for speed, "
            "this table's step is the one to read"
        )
    if study is not None:
        # fp16 without a scaler is a mode to recommend only where the study finds the scaler
        # not needed.
        _, bare = catalog.fp16_pair()
        scaler = study["scaler"]
        unsafe = set() if scaler is not None and scaler.verdict == training.NOT_NEEDED else {bare}
        like = {m for m, v in study["verdicts"].items() if v.within}
        safe = at[[m in like and m not in unsafe for m in at["mode"]]]
        chosen = timing.fastest(safe) if len(safe) else None
        undecided = any(v.verdict == training.NOT_KNOWN for v in study["verdicts"].values())
        if chosen is not None and set(chosen.rows["mode"]) == {catalog.reference()} and undecided:
            # fp32 against itself answers nothing while the other modes are undecided.
            chosen = None
            row[NOTE] = f"{NOT_KNOWN} for {row['model']}: {ONLY_FP32}"
        else:
            named = _named(chosen) if chosen is not None else "none"
            row["fastest that trains like fp32"] = "same" if named == row["fastest"] else named
    shown = (chosen or fastest).first
    row["× fp32"] = _speedup(at, shown, catalog.reference())
    row["× TF32"] = _speedup(at, shown, catalog.tf32())
    row["peak GiB"] = figure(shown["peak_alloc_gib"])
    row["float8"] = _float8(at, rows[rows["batch_size"] == bs])
    row["fp16 without GradScaler"] = (
        f"{NOT_KNOWN} (studied at {other})" if other is not None else _scaler(study)
    )
    return row


def studies_of(rows: pd.DataFrame, studies: list[dict]) -> list[dict]:
    """The time-to-quality studies of a run's model at its preset (another size: another model)."""
    return [s for s in studies if (s["cfg"].model, s["cfg"].preset) == _model(rows)]


def table(
    models: list[tuple[pd.DataFrame, list[dict]]],  # (a timing run's rows, its model's studies)
    optimizer: str,
    expected: list[int | None] | None = None,
) -> list[str]:
    """The markdown table, a row per (rows, studies), and its notes (`expected`: cases per run)."""
    built = [model_row(r, s, optimizer) for r, s in models]
    df = pd.DataFrame(built, columns=COLUMNS)
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
        "peak GiB: of the (first) fastest mode that trains like fp32, else of the fastest, "
        "against fp32 and TF32 at its variant.",
        "fp16 without GradScaler: the time-to-quality study's verdict; unless it finds the "
        "scaler not needed, fp16 without it does not count as training like fp32.",
    ]
    undecided = [r[NOTE] for r in built if NOTE in r]
    notes += [f"{n}." for n in undecided]
    notes += [f"{r[STEP_NOTE]}." for r in built if STEP_NOTE in r]
    unstudied = [r for r in built if NOTE not in r and NOT_KNOWN in (r[c] for c in STUDY_COLUMNS)]
    if unstudied:
        elsewhere = " elsewhere" if undecided else ""
        notes.append(f"{NOT_KNOWN} in {study_columns}{elsewhere}: {NO_STUDY}.")
    if stopped:
        notes.append("; ".join(stopped) + ".")
    # Cells unpadded: a column as wide as its longest list of tied modes, repeated on every
    # row, would double the README (tests/test_readme.py holds it to a size).
    lines = ["| " + " | ".join(cells) + " |" for cells in [COLUMNS, *df.values]]
    lines.insert(1, "|" + "---|" * len(COLUMNS))
    return ["\n".join(lines), "", " ".join(notes)]
