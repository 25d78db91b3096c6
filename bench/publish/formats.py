"""The export formats as a table without pandas: `--format`'s choices and their help are read
from it before anything heavy is imported; `bench.publish.export` writes each."""

from __future__ import annotations

FORMATS: dict[str, str] = {
    "github-action-benchmark": "JSON for github-action-benchmark's customSmallerIsBetter tool",
}
"""Every export format, the default first: its `--format` value -> the format in words."""
DEFAULT = next(iter(FORMATS))
