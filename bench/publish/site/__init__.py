"""The results as a static site (`ampbench publish [--output DIR]`): pages that open offline from
the results folder alone (docs/site.md). Every module but `deps` and this one needs the `site`
extra (markdown, plotly): `publish` checks it first."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from bench.publish.site import deps

if TYPE_CHECKING:
    from bench.publish.site.build import Built


def publish(results_dir: Path, out: Path) -> Built:
    """The site of `results_dir` at `out`; one line (a `UsageError`) when the `site` extra is
    missing, the results folder holds no run, or `out` is not a folder publishing may replace."""

    deps.require()
    from bench.publish.site import build  # imports markdown and plotly

    return build.build(results_dir, out)
