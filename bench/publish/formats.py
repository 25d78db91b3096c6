"""The export formats as a table without pandas: `--format`'s choices and their help are read
from it before anything heavy is imported; `bench.publish.export` writes each."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Format:
    name: str
    """The `--format` value."""
    what: str
    """The format in words, for `--help`."""


FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format(
            name="github-action-benchmark",
            what="JSON for github-action-benchmark's customSmallerIsBetter tool",
        ),
    )
}
"""Every export format, the default first."""
DEFAULT = next(iter(FORMATS))
