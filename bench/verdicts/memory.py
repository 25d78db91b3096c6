"""Whether B uses more peak allocated memory than A, case by case: one declared tolerance
(`Tolerance`, `DEFAULT`), no statistics, since a case's peak repeats to the byte across
processes; reserved memory, retries and OOMs are shown beside it and never decide it
(docs/comparing.md, "Memory"). Pure Python: no torch, no pandas."""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

MIB_PER_GIB = 1024
PEAK = "peak_alloc_gib"
"""The column a verdict is judged on."""
PHASES = {"peak_fwd_gib": "forward", "peak_bwd_gib": "backward", "peak_opt_gib": "optimizer"}
"""Each phase's allocated peak (`bench.measure.memory`) -> its name in a verdict."""
REPORTED = ("peak_reserved_gib", "alloc_retries", "ooms")
"""Shown beside the verdict, never judged: reserved memory follows the allocator's history."""
COLUMNS = (PEAK, *PHASES, *REPORTED)
"""The memory columns a round of a case carries into a comparison."""
VERDICTS = ("more memory", "less memory", "same memory", "memory not repeatable", "not measured")


@dataclass(frozen=True, kw_only=True)
class Tolerance:
    """How far two peaks may differ and still be `same memory`: the larger of `mib` and `pct`
    percent of A's peak."""

    mib: float
    """The absolute floor, in MiB (2**20 bytes)."""
    pct: float
    """The relative part, in percent of A's peak."""

    def __post_init__(self) -> None:
        for name in ("mib", "pct"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"memory tolerance {name}: {value!r} is not a number")
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"memory tolerance {name}: {value!r} is not a number >= 0")

    def gib(self, base_gib: float) -> float:
        """The tolerance, in GiB, around a peak of `base_gib`."""
        return max(self.mib / MIB_PER_GIB, self.pct / 100 * abs(base_gib))

    @classmethod
    def parse(cls, text: str, *, like: Tolerance | None = None) -> Tolerance:
        """`1%`, `16MiB`, or both (`16MiB,1%`); a part not given keeps `like`'s (or 0 where no
        `like`). One line names a value it cannot read."""
        mib = like.mib if like is not None else 0.0
        pct = like.pct if like is not None else 0.0
        parts = [p.strip() for p in str(text).split(",") if p.strip()]
        if not parts:
            raise ValueError(f"memory tolerance {text!r}: give N%, NMiB or both (16MiB,1%)")
        for part in parts:
            found = re.fullmatch(r"(\d+(?:\.\d*)?|\.\d+)\s*(%|MiB)", part, flags=re.IGNORECASE)
            if found is None:
                raise ValueError(
                    f"memory tolerance {text!r}: {part!r} is not N% or NMiB (e.g. 16MiB,1%)"
                )
            value, unit = float(found.group(1)), found.group(2)
            if unit == "%":
                pct = value
            else:
                mib = value
        return cls(mib=mib, pct=pct)

    def spec(self) -> str:
        """As `parse` reads it back: `2MiB,1%`."""
        return f"{self.mib:g}MiB,{self.pct:g}%"

    def text(self) -> str:
        """In words, as reports state it: `the larger of 2 MiB and 1% of A's peak`."""
        return f"the larger of {self.mib:g} MiB and {self.pct:g}% of A's peak"


DEFAULT = Tolerance(mib=2.0, pct=1.0)
"""The declared default. On one H200 a case's peak allocated memory was the same to the byte in
every fresh process of one commit (docs/comparing.md, "Memory": `scripts/memory_aa_spread.py`
over the committed A/A runs and saves), so any tolerance above zero calls that A/A `same memory`;
1% lets a change of a few percent (one activation kept alive across the backward) be called,
and the 2 MiB floor keeps a small case's verdict off the allocator's block rounding."""


def _values(rounds: Sequence[Mapping[str, object]], column: str) -> list[float]:
    out = []
    for r in rounds:
        v = r.get(column)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            out.append(float(v))
    return out


def _median(rounds: Sequence[Mapping[str, object]], column: str) -> float:
    values = _values(rounds, column)
    return statistics.median(values) if values else math.nan


def _total(rounds: Sequence[Mapping[str, object]], column: str) -> float:
    """A count over the rounds (retries, OOMs): NaN where no round recorded it."""
    values = _values(rounds, column)
    return float(sum(values)) if values else math.nan


def _absent(rounds: Sequence[Mapping[str, object]], side: str) -> str | None:
    """Why a side has no peak to judge, or None when it has one."""
    if not rounds:
        return f"{side} has no round of the case"
    if _values(rounds, PEAK):
        return None
    if all(PEAK not in r for r in rounds):
        return f"{side}'s results predate peak memory columns"
    return f"{side} did not measure peak memory (a CPU run, or a peak not read)"


def judge(
    rounds_a: Sequence[Mapping[str, object]],
    rounds_b: Sequence[Mapping[str, object]],
    tolerance: Tolerance = DEFAULT,
) -> dict[str, object]:
    """One case's memory verdict from every round of each side (each a mapping of `COLUMNS`;
    absent or NaN where not measured). Returns `memory_verdict` (one of `VERDICTS`),
    `memory_note` (why, where the verdict needs a reason), A's and B's median peaks
    (`peak_alloc_gib_a`, `_b`), B less A in MiB and percent (`memory_change_mib`,
    `memory_change_pct`), the phase whose peak moved most (`memory_phase`), each side's spread
    over its rounds (`memory_spread_mib_a`, `_b`), and the reported columns per side (reserved
    peak as a median, retries and OOMs summed over the rounds)."""
    out: dict[str, object] = {"memory_verdict": "not measured", "memory_note": ""}
    for col in (PEAK, "peak_reserved_gib"):
        out[f"{col}_a"], out[f"{col}_b"] = _median(rounds_a, col), _median(rounds_b, col)
    for col in ("alloc_retries", "ooms"):
        out[f"{col}_a"], out[f"{col}_b"] = _total(rounds_a, col), _total(rounds_b, col)
    out |= {"memory_change_mib": math.nan, "memory_change_pct": math.nan, "memory_phase": ""}
    why = [w for w in (_absent(rounds_a, "A"), _absent(rounds_b, "B")) if w]
    if why:
        out["memory_note"] = "; ".join(why)
        return out
    a, b = float(out[f"{PEAK}_a"]), float(out[f"{PEAK}_b"])  # type: ignore[arg-type]
    allowed = tolerance.gib(a)
    unsteady = []
    for side, rounds in (("A", rounds_a), ("B", rounds_b)):
        values = _values(rounds, PEAK)
        spread = max(values) - min(values)
        out[f"memory_spread_mib_{side.lower()}"] = spread * MIB_PER_GIB
        if spread > allowed:
            unsteady.append(
                f"{side}'s {len(values)} rounds span {spread * MIB_PER_GIB:.4g} MiB "
                f"({min(values):.4g} to {max(values):.4g} GiB)"
            )
    out["memory_change_mib"] = (b - a) * MIB_PER_GIB
    out["memory_change_pct"] = (b / a - 1) * 100 if a > 0 else math.nan
    if unsteady:  # a change between the sides means nothing while one side moves by itself
        out["memory_verdict"] = "memory not repeatable"
        out["memory_note"] = "; ".join(unsteady)
        return out
    if abs(b - a) <= allowed:
        out["memory_verdict"] = "same memory"
        return out
    out["memory_verdict"] = "more memory" if b > a else "less memory"
    out["memory_phase"] = _moved_phase(rounds_a, rounds_b)
    return out


def _moved_phase(
    rounds_a: Sequence[Mapping[str, object]], rounds_b: Sequence[Mapping[str, object]]
) -> str:
    """The phase whose allocated peak moved most between A and B; empty where no phase peak was
    measured on both sides (a compiled or captured variant records one peak for the step)."""
    moved = {}
    for col, name in PHASES.items():
        change = _median(rounds_b, col) - _median(rounds_a, col)
        if math.isfinite(change):
            moved[name] = abs(change)
    return max(moved, key=moved.__getitem__) if moved else ""


def summary(verdicts: Sequence[Mapping[str, object]]) -> str:
    """The memory verdicts counted for a summary line, with the range of the change where B
    moved: `4 more memory (+11 to +13%), 2 same memory`."""
    parts = []
    for name in VERDICTS:
        chosen = [v for v in verdicts if v.get("memory_verdict") == name]
        if not chosen:
            continue
        text = f"{len(chosen)} {'memory ' if name == 'not measured' else ''}{name}"
        pcts = _values(chosen, "memory_change_pct")
        if name in ("more memory", "less memory") and pcts:
            lo, hi = f"{min(pcts):+.3g}", f"{max(pcts):+.3g}"
            text += f" ({lo}%)" if lo == hi else f" ({lo} to {hi}%)"
        parts.append(text)
    return ", ".join(parts)
