"""The one set of validators for every setting of a case or a job and every option of the command
line: `ValueError("NAME VALUE is not ...")` in one line, wherever the value comes from."""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from bench.ground import cards


def shown(value: object) -> str:
    """A value as it would be typed: a tuple as a comma list (`''` when empty), a name quoted."""
    if isinstance(value, tuple):
        return ",".join(map(str, value)) or "''"
    return repr(value) if isinstance(value, str) else str(value)


def refuse(name: str, value: object, what: str) -> ValueError:
    """The one-line error of a bad value: `NAME VALUE WHAT`."""
    return ValueError(" ".join(part for part in (name, shown(value), what) if part))


@dataclass(frozen=True)
class Check:
    """A validator of one value: `what` it must be, how text converts to it, and the test."""

    what: str
    """The end of the error: `is not a positive integer`."""
    convert: Callable[[str], object]
    ok: Callable[[object], bool]
    choices: tuple[str, ...] | None = None
    """The names a choice accepts (None for any other check)."""

    def __call__(self, name: str, value: object) -> object:
        if not self.ok(value):
            raise refuse(name, value, self.what)
        return value

    def parse(self, name: str, text: str) -> object:
        """`text` from the command line, converted and checked; an error shows it as typed."""
        try:
            value = self.convert(text)
        except ValueError:
            raise refuse(name, text, self.what) from None
        if not self.ok(value):
            raise refuse(name, text, self.what)
        return value


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


POSITIVE_INT = Check("is not a positive integer", int, lambda v: _is_int(v) and v > 0)
NON_NEGATIVE_INT = Check("is not an integer >= 0", int, lambda v: _is_int(v) and v >= 0)
POSITIVE_FINITE = Check(
    "is not a positive finite number", float, lambda v: _is_number(v) and 0 < v < math.inf
)
NON_NEGATIVE_FINITE = Check(
    "is not a finite number >= 0", float, lambda v: _is_number(v) and 0 <= v < float("inf")
)
_UNIT_S = {"s": 1.0, "m": 60.0, "h": 3600.0}


def seconds(text: str) -> float:
    """A duration as typed: `900s`, `15m`, `1h`, or a bare number of seconds."""
    text = text.strip().lower()
    scale = _UNIT_S.get(text[-1:])
    return float(text[:-1] if scale else text) * (scale or 1.0)


DURATION = Check(
    "is not a duration (900s, 15m, 1h)", seconds, lambda v: _is_number(v) and 0 < v < math.inf
)
FRACTION = Check("is not a number between 0 and 1", float, lambda v: _is_number(v) and 0 < v < 1)
TAG = Check(
    "is not a tag: use letters, digits, '.' and '-' only",
    str,
    lambda v: isinstance(v, str) and re.fullmatch(r"[A-Za-z0-9.-]+", v) is not None,
)


def _is_model(value: object) -> bool:
    """A built-in workload's name, a zoo model's, or a user's factory's spec."""
    if not isinstance(value, str):
        return False
    zoo, _, name = value.partition(":")
    return (
        value in cards.CARDS
        or (zoo in cards.ZOOS and re.fullmatch(r"\S+", name) is not None)
        or re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*", value) is not None
    )


MODEL = Check(
    "is not a workload (mlp, gpt, resnet50), a zoo model (hf:NAME, timm:NAME, torchvision:NAME) "
    "or a user's package.module:factory",
    str,
    _is_model,
)


class Choice(Check):
    """One of a table's names, read when asked: a row registered after this check was made (a
    mode a test adds to `bench.ground.catalog.CARDS`) is a choice too."""

    def __init__(self, table: Iterable[str]) -> None:
        object.__setattr__(self, "table", table)

    @property
    def choices(self) -> tuple[str, ...]:  # type: ignore[override]
        return tuple(self.table)

    @property
    def what(self) -> str:  # type: ignore[override]
        return f"is unknown; choose from {', '.join(self.choices)}"

    @property
    def convert(self) -> Callable[[str], object]:  # type: ignore[override]
        return str

    @property
    def ok(self) -> Callable[[object], bool]:  # type: ignore[override]
        return lambda v: isinstance(v, str) and v in self.choices


def choice(choices: Iterable[str]) -> Check:
    """One of `choices`: a table (a dict, read live: `Choice`) or a fixed list of names."""
    if isinstance(choices, Mapping):
        return Choice(choices)
    names = tuple(choices)
    return Check(f"is unknown; choose from {', '.join(names)}", str, lambda v: v in names, names)


def items(name: str, values: object, each: Check | None = None) -> tuple:
    """A non-empty tuple without repeats (a repeated batch size or seed would run a case twice),
    each item checked by `each`."""
    if not isinstance(values, tuple) or not values:
        raise refuse(name, values, "is not a non-empty tuple")
    repeated = next((v for v in values if values.count(v) > 1), None)
    if repeated is not None:
        raise refuse(name, repeated, "is given twice")
    for value in values:
        if each is not None:
            each(name, value)
    return values


def parse_items(name: str, text: str, each: Check) -> list:
    """A comma list typed on the command line: not empty, no item twice, each item checked."""
    words = [t.strip() for t in text.split(",") if t.strip()]
    if not words:
        raise refuse(name, text, "is an empty list")
    values = [each.parse(name, word) for word in words]
    repeated = next((w for w, v in zip(words, values, strict=True) if values.count(v) > 1), None)
    if repeated is not None:
        raise refuse(name, repeated, f"is listed twice in {text!r}")
    return values


def fields(obj: object, blame: Callable[[str], str] = str) -> None:
    """Run the `check` of every field of the dataclass `obj` that has one in its metadata (with
    `items` in it too, the check applies to each item of a non-empty tuple without repeats;
    `items: "maybe none"` allows the empty tuple); `blame(field name)` is the
    name an error gives."""
    for f in dataclasses.fields(obj):
        check = f.metadata.get("check")
        if check is None:
            continue
        value = getattr(obj, f.name)
        name = blame(f.name)
        if f.metadata.get("items") == "maybe none" and value == ():
            continue
        if f.metadata.get("items"):
            items(name, value, check)
        else:
            check(name, value)
