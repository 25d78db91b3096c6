"""One line of a JSON-lines file (rows, samples, a study's tables, an own loop's files), as
every writer of ampbench writes it and every reader reads it: strict JSON, which JavaScript's
JSON.parse and jq read, so a number that is not finite is `null`, never `NaN`; read back, a
`null` in a series is NaN again. A line an older folder wrote with `NaN` reads as it did."""

from __future__ import annotations

import json
import math

import numpy as np

from bench.cases.sizes import Sizes


def json_value(value: object) -> object:
    """A value JSON has no type for: a case's sizes as name -> value (`schema.migrate_row` reads
    them back), anything else as its text."""
    return value.named() if isinstance(value, Sizes) else str(value)


def finite(value: object) -> object:
    """`value` with each float JSON has no number for (NaN, an infinity) as None, nested ones
    too; numpy's numbers as Python's."""
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    return value


def dumps(obj: object) -> str:
    """`obj` as one line: strict JSON, a non-finite number `null` (`finite`)."""
    return json.dumps(finite(obj), default=json_value, allow_nan=False)


def loads(line: str | bytes) -> object:
    """One line back: each `null` inside a list is NaN (a list is a series of numbers, a
    case's step times with a skipped step among them, whose readers take NaN for a missing
    one); a `null` outside a list stays None. Raises `json.JSONDecodeError` as json does."""
    return json.loads(line, object_hook=_numbers)


def _numbers(obj: dict) -> dict:
    for key, value in obj.items():
        if isinstance(value, list):
            obj[key] = _nan_for_null(value)
    return obj


def _nan_for_null(values: list) -> list:
    return [
        math.nan if v is None else _nan_for_null(v) if isinstance(v, list) else v for v in values
    ]
