"""The results as a static site: `ampbench publish [--output DIR]`.

From a results folder alone it makes pages that open from the file system (file://) or any
static host and fetch nothing at view time: a front page (the answer per workload, the run of
record's headline table, the latest runs), a page per run folder (its report's tables, sortable,
and its figures, with the compare verdicts against the run before it on the same grid), every
run by kind, and a history page per GPU model with an interactive chart per case across commits.

- `build`: the whole site, page by page, into a folder that replaces the previous site whole;
  `output`: that folder, checked and swapped, never one that publishing did not make.
- `layout`: where each page and file lies in the site, and the relative links between them.
- `markup`: a report's markdown to HTML (python-markdown), links pointed into the site, tables
  made sortable, verdict cells marked; `page`: the HTML document around a page's body;
  `assets`: the style sheet, the script and plotly.js, written once beside the pages.
- `front`, `run_pages`, `history_page`: the pages; `grids`: consecutive runs of one grid and
  their verdicts; `charts`: the plotly chart of each case's history.
- `deps`: the optional packages the site needs (the `site` extra: markdown and plotly).

Every module but `deps` and this one needs those packages: `publish` checks them first. Like all
of publishing, the site never imports torch.
"""

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
