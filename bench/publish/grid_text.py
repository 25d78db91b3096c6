"""A grid in one line, as the index's `grid` column shows it, for the kinds of folder other than a
timing run (`bench.cases.grid.describe` does those): numerics studies, largest-batch searches,
pytest-benchmark saves."""

from __future__ import annotations

from dataclasses import dataclass

from bench.cases.grid import fit


@dataclass(frozen=True)
class Axis:
    """One axis of a grid description, as its values (`fp32,bf16-amp`) or, where the line is too
    long, as a count (`2 modes`)."""

    values: str
    count: str


def axis(values: list, noun: str, *, label: str = "") -> Axis | None:
    """An axis of `values`; None when there are none (a folder older than the axis)."""
    if not values:
        return None
    shown = f"{label}{','.join(map(str, values))}"
    return Axis(shown, f"{len(values)} {noun}s" if len(values) > 1 else shown)


def batches(values: list) -> Axis | None:
    """Batch sizes, or their range where there are more than two."""
    if not values:
        return None
    shown = f"batch {','.join(map(str, values))}"
    return Axis(shown, f"batch {min(values)}–{max(values)}" if len(values) > 2 else shown)


def line(axes: list[Axis | None], *, extras: tuple[str, ...] = ()) -> str:
    """`a × b × c, extra, extra` in at most GRID_WIDTH characters: the longest axis shown by its
    values gives way to its count until the line fits; a line that still does not fit is cut
    with `…` (the report holds the whole grid)."""
    return fit([(a.values, a.count) for a in axes if a is not None], extras)


def lr(x: float) -> str:
    """A learning rate as people write it: 3e-4, 1e-3."""
    mantissa, exponent = f"{x:e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"
