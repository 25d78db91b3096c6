"""A GPU model's history page: what `ampbench history` writes (`bench.publish.history.render`:
the verdict counts, the cases slower than the revision before, the runs, a table per mode), with an
interactive chart per case (`bench.publish.site.charts`) in place of the static figure. Each
regression the page lists links to its case's chart."""

from __future__ import annotations

import re
from dataclasses import dataclass
from html import escape
from pathlib import Path, PurePosixPath

from bench.publish import history
from bench.publish.site import charts, markup
from bench.publish.site.layout import Layout
from bench.store.folders import gpu_slug
from bench.store.tree import HISTORY_DIR
from bench.verdicts import history_points

REGRESSION = re.compile(r"^- `([^`]+)`:", re.M)


@dataclass(frozen=True)
class History:
    """A GPU model's history page's body, and what the front page says of it."""

    gpu: str
    page: PurePosixPath
    body: str
    revisions: int
    """The runs of one commit count once (`bench.verdicts.history_points.revisions`)."""
    cases: int
    slower: int
    charts: int
    more_memory: int = 0
    """Points whose memory verdict against the revision before is `more memory`."""


def _charts_html(found: list[charts.Chart], cases: int) -> str:
    out = [
        '<h2 id="charts">Each case across revisions</h2>',
        f'<p class="lede">One chart per case measured in two revisions or more ({len(found)} '
        f"of {cases} cases), in the order of their commits. A red triangle pointing up is a "
        "case slower than in the revision before it (framed in red, first among its mode's), a "
        "green one pointing down faster; hover a point for its runs, commit and verdict. The "
        "tables below have every case.</p>",
    ]
    mode = None
    for i, chart in enumerate(found):
        if chart.mode != mode:
            if mode is not None:
                out.append("</div>")
            mode = chart.mode
            out += [f'<h3 id="charts-{escape(mode)}">{escape(mode)}</h3>', '<div class="charts">']
        said = [
            w for w, on in (("slower", chart.regressed), ("more memory", chart.more_memory)) if on
        ]
        badge = "".join(f'<span class="badge">{w}</span>' for w in said)
        framed = chart.regressed or chart.more_memory
        figure = chart.figure.replace("</", "<\\/")  # never closes its <script> early
        out.append(
            f'<div class="chart-card{" regressed" if framed else ""}" '
            f'id="{charts.anchor(chart.case_id)}"><h4 title="{escape(chart.case_id)}">{badge}'
            f"{escape(chart.title)}</h4>"
            f'<div class="chart" data-figure="fig-{i}"></div>'
            f'<script type="application/json" id="fig-{i}">{figure}</script></div>'
        )
    if mode is not None:
        out.append("</div>")
    return "\n".join(out)


def build(results_dir: Path, gpu: str, layout: Layout) -> History:
    """The history page of `gpu`, from the timing runs of that GPU model in `results_dir`."""
    revisions, points = history_points.collect(results_dir, gpu)
    source = results_dir / HISTORY_DIR
    page = layout.add_history(source / f"{gpu_slug(gpu)}.md", gpu)
    text = history.render(revisions, points, gpu, results_dir=results_dir)
    found = charts.charts(revisions, points)
    drawn = {c.case_id for c in found}

    def to_chart(m: re.Match) -> str:
        case_id = m[1]
        if case_id not in drawn:
            return m[0]
        return f"- [`{case_id}`](#{charts.anchor(case_id)}):"

    text = REGRESSION.sub(to_chart, text)
    # The charts go after the runs they name and before the tables per mode.
    head, sep, rest = text.partition("\n## Runs\n")
    runs_table, sep2, tables = rest.partition("\n## ")
    body = "\n".join(
        [
            markup.to_html(head + sep + runs_table, layout, source, page),
            _charts_html(found, points["case_id"].nunique()),
            markup.to_html(sep2.lstrip("\n") + tables, layout, source, page) if sep2 else "",
        ]
    )
    slower = int((points["verdict"] == "slower").sum())
    more = (
        int((points["memory_verdict"] == "more memory").sum()) if "memory_verdict" in points else 0
    )
    return History(
        gpu, page, body, len(revisions), int(points["case_id"].nunique()), slower, len(found), more
    )
