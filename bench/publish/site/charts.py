"""The history's interactive charts: one plotly chart per case of a GPU model's history, its median
step time per revision marked by verdict (and its peak memory on a second axis), a regression
framed in red and listed first."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import pandas as pd
import plotly.graph_objects as go
from plotly.utils import PlotlyJSONEncoder

from bench.ground.catalog import colour
from bench.publish import history

SYMBOLS = {"^": "triangle-up", "v": "triangle-down", "o": "circle", "x": "x", "s": "square"}
VERDICT_COLOURS = {"slower": "#cf222e", "faster": "#1a7f37"}
MEMORY_COLOUR = "#6e7781"
MEMORY_SYMBOLS = {"more memory": "triangle-up", "less memory": "triangle-down"}
"""Memory verdicts drawn as a triangle (red for more, green for less); others a small dot."""
HEIGHT = 250
TICKS_WITH_COMMITS = 7
MIN_SPAN = 0.10
"""The least a chart's y axis spans, relative to its middle: sub-percent noise stays flat."""


@dataclass(frozen=True)
class Chart:
    """One case's chart: where the page anchors it, its title, and its plotly figure (JSON)."""

    case_id: str
    mode: str
    title: str
    regressed: bool
    figure: str
    more_memory: bool = False
    """The case used more memory than in a revision before (framed in red as a slower one)."""


def anchor(case_id: str) -> str:
    """The id of a case's chart on its history page."""
    return "case-" + re.sub(r"[^A-Za-z0-9]+", "-", case_id).strip("-")


def _shared(case_ids: list[str]) -> set[str]:
    """The parts of a case id (`fp32/fused/b256/1024x16000x2000/cuda/s0`) every case shares:
    left out of the titles, which then say what tells the cases apart."""
    parts = [set(c.split("/")) for c in case_ids]
    return set.intersection(*parts) if parts else set()


def _y_range(ms: pd.Series) -> list[float]:
    lo, hi = float(ms.min()), float(ms.max())
    mid, half = (lo + hi) / 2, max(hi - lo, MIN_SPAN * (lo + hi) / 2) / 2
    return [mid - 1.15 * half, mid + 1.15 * half]


def _figure(case: pd.DataFrame, revisions: pd.DataFrame, line: str) -> str:
    run = revisions.set_index("label")
    # Each run's commit under its label, while they fit side by side; the hover has it always.
    ticks = [
        f"{lab}<br>{run.loc[lab, 'commit']}" if len(case) <= TICKS_WITH_COMMITS else lab
        for lab in case["label"]
    ]
    markers = [history.VERDICT_MARKERS[v] for v in case["verdict"]]
    verdicts = [
        v + (f" {r:.3f}× against {p}" if pd.notna(r) else "")
        for v, r, p in zip(case["verdict"], case["ratio"], case["previous"], strict=True)
    ]
    custom = [
        [run.loc[lab, "run"], run.loc[lab, "commit"], f"{run.loc[lab, 'date']:%Y-%m-%d}", text]
        for lab, text in zip(case["label"], verdicts, strict=True)
    ]
    symbols = [
        SYMBOLS[m] + ("-open" if v == "unclear" else "")
        for (m, _, _), v in zip(markers, case["verdict"], strict=True)
    ]
    fig = go.Figure(
        go.Scatter(
            x=ticks,
            y=case["median_ms"],
            mode="lines+markers",
            line={"color": line, "width": 1.5},
            marker={
                "symbol": symbols,
                "size": [size * 1.4 for _, size, _ in markers],
                "color": [VERDICT_COLOURS.get(v, line) for v in case["verdict"]],
                "line": {
                    "color": ["black" if v in VERDICT_COLOURS else line for v in case["verdict"]],
                    "width": 1,
                },
            },
            customdata=custom,
            hovertemplate="%{customdata[0]}<br>commit %{customdata[1]}, %{customdata[2]}"
            "<br>%{y:.4g} ms<br>%{customdata[3]}<extra></extra>",
        ),
        layout={
            "template": "none",  # no theme: each figure's JSON stays small
            "height": HEIGHT,
            "margin": {"l": 56, "r": 12, "t": 8, "b": 48},
            "font": {"size": 11},
            "showlegend": False,
            "xaxis": {"type": "category", "showgrid": False},
            "yaxis": {
                "title": {"text": "median step ms"},
                "gridcolor": "#eaeef2",
                "range": _y_range(case["median_ms"]),
            },
        },
    )
    _add_memory(fig, case, ticks, custom)
    return json.dumps(fig.to_plotly_json(), cls=PlotlyJSONEncoder)


def _add_memory(fig: go.Figure, case: pd.DataFrame, ticks: list[str], custom: list) -> None:
    """The case's peak allocated memory per revision, on a second axis at the right."""
    if "peak_alloc_gib" not in case or not case["peak_alloc_gib"].notna().any():
        return
    verdicts = list(case["memory_verdict"])
    words = [
        v + (f" {c:+.3g}%" if pd.notna(c) else "")
        for v, c in zip(verdicts, case["memory_change_pct"], strict=True)
    ]
    fig.add_trace(
        go.Scatter(
            x=ticks,
            y=case["peak_alloc_gib"],
            yaxis="y2",
            mode="lines+markers",
            line={"color": MEMORY_COLOUR, "width": 1, "dash": "dot"},
            marker={
                "symbol": [MEMORY_SYMBOLS.get(v, "circle") for v in verdicts],
                "size": [12 if v in MEMORY_SYMBOLS else 5 for v in verdicts],
                "color": [
                    {"more memory": VERDICT_COLOURS["slower"]}.get(
                        v, VERDICT_COLOURS["faster"] if v == "less memory" else MEMORY_COLOUR
                    )
                    for v in verdicts
                ],
            },
            customdata=[[*c[:3], w] for c, w in zip(custom, words, strict=True)],
            hovertemplate="%{customdata[0]}<br>commit %{customdata[1]}, %{customdata[2]}"
            "<br>peak %{y:.4g} GiB<br>%{customdata[3]}<extra></extra>",
        )
    )
    fig.update_layout(
        yaxis2={
            "title": {"text": "peak GiB", "font": {"color": MEMORY_COLOUR}},
            "overlaying": "y",
            "side": "right",
            "showgrid": False,
            "range": _y_range(case["peak_alloc_gib"].dropna()),
        },
        margin={"l": 56, "r": 56, "t": 8, "b": 48},
    )


def charts(revisions: pd.DataFrame, points: pd.DataFrame) -> list[Chart]:
    """A chart per case measured in two revisions or more, by mode, slower cases first."""
    ok = points[points["median_ms"].notna()]
    shared = _shared(list(dict.fromkeys(ok["case_id"])))
    out = []
    for mode, of_mode in ok.groupby("mode", sort=False):
        found = []
        for case_id, case in of_mode.groupby("case_id", sort=True):
            if len(case) < 2:
                continue
            regressed = bool((case["verdict"] == "slower").any())
            more = "memory_verdict" in case and bool(
                (case["memory_verdict"] == "more memory").any()
            )
            figure = _figure(case, revisions, colour(str(mode)))
            kept = [p for p in str(case_id).split("/") if p not in shared and p != mode]
            title = " · ".join(kept) or str(case_id)
            found.append(Chart(str(case_id), str(mode), title, regressed, figure, more))
        # Stable: the ids in order otherwise.
        out += sorted(found, key=lambda c: not (c.regressed or c.more_memory))
    return out
