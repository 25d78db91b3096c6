"""A run's timings in other tools' formats: `python -m bench export RUN --format FORMAT`
(github-action-benchmark's `customSmallerIsBetter` JSON: one entry per passing case and phase,
the median with ± half the IQR, named so the action matches it run to run; docs/comparing.md)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.store import results
from bench.store.run_env import RunEnv

EXPORTED_PHASES = {**results.PHASES, "total": "whole step"}
"""The phases exported, in words: the timed phases and the whole step."""
FIELDS = {"name": str, "unit": str, "value": (int, float), "range": str, "extra": str}
REQUIRED = ("name", "unit", "value")
RANGE = re.compile(r"^(\+-|±)\s*\d.+$")
"""What `extractRangeInfo` accepts, with the number checked apart (it must parse)."""


def _extra(r: dict, phase: str, env: RunEnv) -> str:
    axes = " ".join(f"{a}={r[a]}" for a in results.axes())
    return (
        f"{EXPORTED_PHASES[phase]}: median of {r.get('steps')} timed steps, "
        f"range half the IQR\n{axes}\n"
        f"gpu={env.get('gpu')} torch={env.get('torch')} "
        f"commit={(env.get('commit') or 'unknown')[:12]} run={env.get('run_name', '')}"
    )


def github_action_benchmark(run_dir: Path) -> list[dict[str, object]]:
    """The entries of a run for `customSmallerIsBetter`, in the run's case order."""
    env = results.read_env(run_dir)
    df = results.load(run_dir)
    out = []
    for r in df[df["status"] == "ok"].to_dict("records"):
        for phase in EXPORTED_PHASES:
            value, iqr = r.get(f"{phase}_ms"), r.get(f"{phase}_ms_iqr")
            if value is None or not math.isfinite(value):
                continue  # this phase was not timed apart (a fused variant)
            entry: dict[str, object] = {
                "name": f"{r['case_id']} {phase}",
                "unit": "ms",
                "value": float(value),
            }
            if iqr is not None and math.isfinite(iqr):
                # `#` keeps a decimal point, so the action's range pattern (a digit, then at
                # least one more character) matches even a whole number.
                entry["range"] = f"± {iqr / 2:#.4g}"
            entry["extra"] = _extra(r, phase, env)
            out.append(entry)
    return out


def validate(data: object) -> None:
    """Raise ValueError, naming the entry and the field, unless `data` is what
    `customSmallerIsBetter` accepts (no name twice: the action tells benchmarks apart by name)."""
    if not isinstance(data, list):
        raise ValueError(f"the top level must be a JSON array, got {type(data).__name__}")
    if not data:
        raise ValueError("the array is empty; the action fails on a file without results")
    names = set()
    for i, entry in enumerate(data):
        if not isinstance(entry, dict):
            raise ValueError(f"entry {i} must be an object, got {type(entry).__name__}")
        for key in REQUIRED:
            if key not in entry:
                raise ValueError(f"entry {i} has no {key!r}")
        for key, value in entry.items():
            if key not in FIELDS:
                raise ValueError(f"entry {i}: unknown field {key!r} (the action drops it)")
            kind = FIELDS[key]
            if isinstance(value, bool) or not isinstance(value, kind):
                raise ValueError(f"entry {i}: {key!r} must be a {_type_name(kind)}, got {value!r}")
        if not math.isfinite(entry["value"]):
            raise ValueError(f"entry {i}: 'value' must be finite, got {entry['value']!r}")
        if "range" in entry:
            m = RANGE.match(entry["range"])
            number = re.sub(r"^(\+-|±)\s*", "", entry["range"])
            try:
                float(number)
            except ValueError:
                m = None
            if m is None:
                raise ValueError(f"entry {i}: 'range' must be '± NUMBER', got {entry['range']!r}")
        if entry["name"] in names:
            raise ValueError(f"entry {i}: name {entry['name']!r} appears twice")
        names.add(entry["name"])


def _type_name(kind: type | tuple[type, ...]) -> str:
    return "number" if kind == (int, float) else "string"


def _json(entries: list[dict[str, object]]) -> str:
    # allow_nan=False: NaN is not JSON, and the action's JSON.parse would reject the file.
    return json.dumps(entries, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


@dataclass(frozen=True)
class Writer:
    """How one format of the formats table (`bench.publish.formats.FORMATS`) is written: a run's
    entries, the check of what the other tool accepts, and the text written."""

    entries: Callable[[Path], list[dict[str, object]]]
    validate: Callable[[object], None]
    text: Callable[[list[dict[str, object]]], str]


WRITERS = {
    "github-action-benchmark": Writer(github_action_benchmark, validate, _json),
}
"""How each format of `bench.publish.formats` is written, by its `--format` name."""


def export(run_dir: Path, fmt: str) -> str:
    """The run in format `fmt` as text, checked against the format before it is returned."""
    if fmt not in WRITERS:
        raise ValueError(f"unknown export format {fmt!r}; choose from {', '.join(WRITERS)}")
    form = WRITERS[fmt]
    entries = form.entries(run_dir)
    if not entries:
        raise ValueError(f"{run_dir} has no passing case to export")
    form.validate(entries)
    return form.text(entries)
