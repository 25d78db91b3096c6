"""A run folder's pages: its report.md as a page (`bench.publish.site.markup`), a study nested in it
and each comparison kept in it as pages of their own, and, for a timing run, the compare verdicts
against the run before it on the same grid."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from bench.publish.site import markup
from bench.publish.site.grids import Pair
from bench.publish.site.layout import Layout
from bench.store import results
from bench.store.tree import Run

COMPARISONS = "compare_*.md"
AGAINST = "Against the previous run of the same grid"
AGAINST_ID = "against-the-previous-run-of-the-same-grid"
"""The section's heading and the id the `toc` extension gives it."""
TITLE = re.compile(r"^# (.+)$", re.M)


@dataclass(frozen=True)
class Source:
    """A markdown file of a run folder that becomes a page."""

    path: Path
    page: PurePosixPath
    run: Run
    report: bool
    """The folder's own report (else a nested study's report, or a comparison)."""


def register(run: Run, layout: Layout) -> list[Source]:
    """Give `run` its page (where it has a report), a study nested in it and each comparison in
    it theirs; every run is registered before any page is made, so pages link each other."""
    if not (run.path / results.REPORT).is_file():
        return []  # a run in progress or killed: its row in the index says so
    found = [Source(run.path / results.REPORT, layout.add_run(run.path), run, True)]
    for sub in sorted(p for p in run.path.iterdir() if p.is_dir()):
        if (sub / results.REPORT).is_file() and (sub / results.ENV).is_file():
            found.append(Source(sub / results.REPORT, layout.add_run(sub), run, False))
    for path in sorted(run.path.glob(COMPARISONS)):
        found.append(Source(path, layout.add_markdown(path), run, False))
    return found


def title(text: str, fallback: str) -> str:
    found = TITLE.search(text)
    return found[1].replace("`", "") if found else fallback


def _against(pair: Pair) -> tuple[str, str]:
    """The line that opens the page and the section that ends it (markdown of the later run)."""
    before = Path(os.path.relpath(pair.before.path / results.REPORT, pair.after.path))
    link = f"[{pair.before.path.name}]({before.as_posix()})"
    words = re.sub(r"(\d+ slower)", r"**\1**", pair.words())
    line = (
        f"**{AGAINST}** ({link}): {words}; "
        f"[every case's verdict](#{AGAINST_ID}) is at the end of this page."
    )
    section = (
        f"## {AGAINST}\n\n"
        f"{link} measured the same grid before this run. Each case of both runs, this run (B) "
        f"against that one (A), as `ampbench compare` says it:\n\n{pair.markdown()}"
    )
    return line, section


def _comparisons(source: Source, sources: list[Source]) -> str:
    kept = [s for s in sources if s.run is source.run and s.path.name.startswith("compare_")]
    if not kept:
        return ""
    links = ", ".join(f"[{s.path.stem}]({s.path.name})" for s in kept)
    return f"\n\nComparisons kept in this folder: {links}.\n"


def body(source: Source, sources: list[Source], pair: Pair | None, layout: Layout) -> str:
    """The HTML of a source's page."""
    text = source.path.read_text(encoding="utf-8")
    if source.report:
        text += _comparisons(source, sources)
        if pair is not None:
            line, section = _against(pair)
            head, sep, rest = text.partition("\n\n")  # after the title
            text = f"{head}{sep}{line}\n\n{rest}\n\n{section}"
    return markup.to_html(text, layout, source.path.parent, source.page)
