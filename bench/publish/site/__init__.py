"""The results as a static site (`ampbench publish [--output DIR]`): pages that open offline from
the results folder alone (docs/site.md). Every module of it needs the `site` extra (markdown,
plotly) but this one, which checks for it first."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING

from bench.faults import UsageError

if TYPE_CHECKING:
    from bench.publish.site.build import Built

EXTRA = "site"
PACKAGES = {"markdown": "markdown", "plotly": "plotly"}
"""Module -> the package that brings it."""


def missing() -> list[str]:
    """The packages of the `site` extra that cannot be imported here."""
    return [pkg for module, pkg in PACKAGES.items() if importlib.util.find_spec(module) is None]


def publish(results_dir: Path, out: Path) -> Built:
    """The site of `results_dir` at `out`; one line (a `UsageError`) when the `site` extra is
    missing, the results folder holds no run, or `out` is not a folder publishing may replace."""
    lacking = missing()
    if lacking:
        raise UsageError(
            f"publish needs {' and '.join(lacking)}, which are not installed: "
            f"pip install 'ampbench[{EXTRA}]' (or: pip install {' '.join(lacking)})"
        )
    from bench.publish.site import build  # imports markdown and plotly

    return build.build(results_dir, out)
