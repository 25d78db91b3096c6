"""The memory half of a comparison: each matched case's memory verdict (`bench.verdicts.memory`)
from every round of each side, and how `compare`, `ab` and their summary line show it."""

from __future__ import annotations

import pandas as pd

from bench.text.tables import cell, finite
from bench.verdicts import memory, sides

SIDED = ("peak_alloc_gib", "peak_reserved_gib", "alloc_retries", "ooms", "memory_spread_mib")
"""The verdict's columns of which each side has its own (`_a`, `_b`)."""
RAW = (
    *("memory_verdict", "memory_note", "memory_change_mib", "memory_change_pct", "memory_phase"),
    *(f"{column}_{side}" for column in SIDED for side in "ab"),
)
"""The columns `verdict` adds to a comparison's rows (verdicts.csv keeps them all)."""


def verdict(
    side_a: sides.Side, side_b: sides.Side, rec: dict, tolerance: memory.Tolerance
) -> dict[str, object]:
    """The memory verdict of one matched case (`rec`: a row of the merge of A's and B's cases,
    with `case_id_a` and `case_id_b`) from every round of each side."""
    rounds = []
    for side, suffix in ((side_a, "_a"), (side_b, "_b")):
        case_id = rec.get(f"case_id{suffix}", rec.get("case_id"))
        rounds.append((side.memory or {}).get(str(case_id), []))
    return memory.judge(rounds[0], rounds[1], tolerance)


def _pair(a: object, b: object) -> str:
    return f"{cell(a)} → {cell(b)}" if finite(a) or finite(b) else "–"


def _change(mib: object, pct: object) -> str:
    if not finite(mib):
        return "–"
    pct_text = f" ({pct:+.3g}%)" if finite(pct) else ""
    return f"{mib:+.4g} MiB{pct_text}"


def columns(table: pd.DataFrame) -> pd.DataFrame:
    """The memory columns as a report shows them, one row per row of `table`."""
    if not _judged(table):
        return pd.DataFrame(index=table.index)
    rows = []
    for r in table.to_dict("records"):
        shown = r["memory_verdict"] if r["memory_verdict"] != "not measured" else "–"
        row = {
            "memory": shown,
            "peak GiB (A → B)": _pair(r.get("peak_alloc_gib_a"), r.get("peak_alloc_gib_b")),
            "memory change": _change(r.get("memory_change_mib"), r.get("memory_change_pct")),
            "phase moved": r.get("memory_phase") or "",
            "reserved GiB (A → B)": _pair(
                r.get("peak_reserved_gib_a"), r.get("peak_reserved_gib_b")
            ),
        }
        for col, name in (("alloc_retries", "alloc retries"), ("ooms", "OOMs")):
            row[f"{name} (A → B)"] = _pair(r.get(f"{col}_a"), r.get(f"{col}_b"))
        rows.append(row)
    out = pd.DataFrame(rows, index=table.index)
    if set(out["phase moved"]) == {""}:
        out = out.drop(columns="phase moved")
    for col, name in (("alloc_retries", "alloc retries"), ("ooms", "OOMs")):
        counts = table[[f"{col}_a", f"{col}_b"]].astype(float).fillna(0).to_numpy()
        if not counts.any():  # none recorded, or none happened: nothing to show
            out = out.drop(columns=f"{name} (A → B)")
    return out


def _judged(table: pd.DataFrame) -> bool:
    """Whether any case has a memory verdict (none on CPU runs and older folders)."""
    return "memory_verdict" in table and bool((table["memory_verdict"] != "not measured").any())


def summary(table: pd.DataFrame) -> str:
    """The memory verdicts counted, for the summary line: `4 more memory (+11 to +13%), ...`."""
    if not _judged(table):
        return ""
    return memory.summary(table.to_dict("records"))


def method_lines(table: pd.DataFrame, tolerance: memory.Tolerance) -> list[str]:
    """How the memory verdicts were made, and why a case has none or is not repeatable."""
    if "memory_verdict" not in table or table.empty:
        return []
    if not _judged(table):
        reasons = "; ".join(dict.fromkeys(table["memory_note"].fillna("").astype(str)))
        return [f"Memory: no verdicts ({reasons}).", ""]
    lines = [
        "Memory: each case's peak allocated memory (`peak_alloc_gib`), every round of each side "
        "one value. A side whose rounds span more than the tolerance is `memory not "
        "repeatable`; otherwise B is `more memory` or `less memory` when its median peak moved "
        f"from A's by more than the tolerance, {tolerance.text()}, else `same memory`. Reserved "
        "memory, allocator retries and OOMs are shown, not judged (reserved memory follows the "
        "allocator's history).",
        "",
    ]
    notes = table[table["memory_note"].fillna("").astype(str) != ""]
    if not notes.empty:
        reasons = notes.groupby("memory_note", sort=False).size()
        for reason, n in reasons.items():
            what = "without a memory verdict (–)" if _none(notes, reason) else "not repeatable"
            lines.append(f"- {n} case(s) {what}: {reason}.  ")
        lines.append("")
    return lines


def _none(notes: pd.DataFrame, reason: str) -> bool:
    """Whether the cases with this note have no memory verdict (rather than an unsteady one)."""
    chosen = notes[notes["memory_note"] == reason]
    return bool((chosen["memory_verdict"] == "not measured").all())
