"""One HTML document of the site: the navigation every page shares, the page's body, and the
shared files it loads from `assets/` by relative paths (plotly.js only on pages with charts)."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from pathlib import Path, PurePosixPath

from bench.publish.site import assets
from bench.publish.site.layout import ASSETS_DIR, FRONT, RUNS_PAGE, href, root


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
    scripts = [f"{up}{ASSETS_DIR}/{assets.PLOTLY}"] if charts else []
    scripts.append(f"{up}{ASSETS_DIR}/{assets.SCRIPT}")
    tags = "\n".join(f'<script src="{s}" defer></script>' for s in scripts)
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)} · ampbench</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="{up}{ASSETS_DIR}/{assets.STYLE}">
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


def write(site: Path, page: PurePosixPath, text: str) -> Path:
    path = site.joinpath(*page.parts)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
