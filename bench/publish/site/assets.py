"""The frame of every page: the HTML document around its body (`document`, with the navigation
every page shares) and the files it loads from `assets/`, written once: the style sheet and the
script from static/ (sortable tables, history charts drawn when they scroll into view) and
plotly.js from the installed plotly, so no page fetches anything at view time."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from pathlib import Path, PurePosixPath

from bench.publish.site.layout import ASSETS_DIR, FRONT, RUNS_PAGE, href, root

STYLE, SCRIPT, PLOTLY = "site.css", "site.js", "plotly.min.js"

STATIC = Path(__file__).parent / "static"
"""The style sheet and the script as they are written, beside this module (package data)."""


def write(site: Path, *, plotly: bool) -> list[Path]:
    """Write the shared files into `site`/assets/ (plotly.js only for charts); their paths."""
    folder = site / ASSETS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    written = [folder / STYLE, folder / SCRIPT]
    for path in written:
        path.write_text((STATIC / path.name).read_text(encoding="utf-8"), encoding="utf-8")
    if plotly:
        from plotly.offline import get_plotlyjs  # plotly: loaded only when this runs

        written.append(folder / PLOTLY)
        written[-1].write_text(get_plotlyjs(), encoding="utf-8")
    return written


@dataclass(frozen=True)
class Nav:
    """The links at the top of every page: the front page, every run, each history."""

    histories: tuple[tuple[str, PurePosixPath], ...] = ()
    """(GPU model, its history page)."""

    def html(self, page: PurePosixPath) -> str:
        links = [("Results", FRONT), ("Every run", RUNS_PAGE)]
        links += [(f"History: {gpu}", target) for gpu, target in self.histories]
        return "".join(f'<a href="{href(page, t)}">{escape(text)}</a>' for text, t in links)


def document(
    page: PurePosixPath, title: str, body: str, nav: Nav, *, charts: bool = False, source: str
) -> str:
    """The whole HTML of site page `page`; `source` names the results folder in the footer."""
    up = root(page)
    scripts = [f"{up}{ASSETS_DIR}/{PLOTLY}"] if charts else []
    scripts.append(f"{up}{ASSETS_DIR}/{SCRIPT}")
    tags = "\n".join(f'<script src="{s}" defer></script>' for s in scripts)
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)} · ampbench</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="{up}{ASSETS_DIR}/{STYLE}">
{tags}
</head>
<body>
<header><nav>{nav.html(page)}</nav></header>
<main>
{body}
</main>
<footer>Made by <code>ampbench publish</code> from the run folders of
<code>{escape(source)}</code>; every page works offline.</footer>
</body>
</html>
"""


def write_page(site: Path, page: PurePosixPath, text: str) -> Path:
    path = site.joinpath(*page.parts)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
