"""The frame of every page: the HTML document around its body (`document`, with the navigation
every page shares) and the files it loads from `assets/`, written once: the style sheet, the script
(sortable tables, history charts drawn when they scroll into view) and plotly.js from the installed
plotly, so no page fetches anything at view time."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from pathlib import Path, PurePosixPath

from bench.publish.site.layout import ASSETS_DIR, FRONT, RUNS_PAGE, href, root

STYLE, SCRIPT, PLOTLY = "site.css", "site.js", "plotly.min.js"

CSS = """\
:root { --ink: #1f2328; --muted: #59636e; --line: #d1d9e0; --head: #f6f8fa;
  --slower: #ffd7d5; --slower-ink: #a40e26; --faster: #d2f4d3; --faster-ink: #116329; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink); background: #fff; line-height: 1.5;
  font: 15px/1.5 -apple-system, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif; }
header { background: #24292f; padding: 0.6rem 1.5rem; }
header nav a { color: #fff; margin-right: 1.4rem; text-decoration: none; font-weight: 600; }
header nav a:hover { text-decoration: underline; }
main { max-width: 1400px; margin: 0 auto; padding: 1rem 1.5rem 3rem; }
footer { color: var(--muted); font-size: 0.85rem; text-align: center; padding: 1rem; }
h1 { font-size: 1.7rem; border-bottom: 1px solid var(--line); padding-bottom: 0.3rem; }
h2 { font-size: 1.35rem; border-bottom: 1px solid var(--line); padding-bottom: 0.2rem;
  margin-top: 2rem; }
h3 { font-size: 1.1rem; margin-top: 1.5rem; }
a { color: #0969da; }
code { font: 0.85em ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  background: #eff1f3; padding: 0.1em 0.3em; border-radius: 4px; }
img { max-width: min(100%, 1100px); height: auto; border: 1px solid var(--line);
  border-radius: 4px; }
.unlinked { color: var(--muted); }
.table-frame { overflow-x: auto; margin: 0.8rem 0; max-width: 100%; }
table { border-collapse: collapse; font-size: 13px; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid var(--line); padding: 3px 8px; white-space: nowrap; }
thead th { background: var(--head); position: sticky; top: 0; }
tbody tr:nth-child(even) { background: #fafbfc; }
table.sortable th { cursor: pointer; user-select: none; }
table.sortable th::after { content: " \\2195"; color: #afb8c1; font-size: 0.8em; }
table.sortable th[aria-sort="ascending"]::after { content: " \\25B2"; color: var(--ink); }
table.sortable th[aria-sort="descending"]::after { content: " \\25BC"; color: var(--ink); }
td.slower { background: var(--slower); color: var(--slower-ink); font-weight: 600; }
td.faster { background: var(--faster); color: var(--faster-ink); font-weight: 600; }
details { margin: 0.5rem 0; }
summary { cursor: pointer; color: #0969da; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(420px, 1fr));
  gap: 0.8rem; margin: 0.8rem 0 1.6rem; }
.chart-card { border: 1px solid var(--line); border-radius: 6px; padding: 0.3rem 0.5rem; }
.chart-card.regressed { border: 2px solid var(--slower-ink); background: #fff8f8; }
.chart-card h4 { margin: 0.2rem 0; font-size: 0.85rem; font-weight: 600; word-break: break-all; }
.chart-card .badge { background: var(--slower-ink); color: #fff; border-radius: 3px;
  padding: 0 0.35em; margin-right: 0.4em; font-size: 0.8rem; }
.chart { height: 250px; }
.lede { color: var(--muted); }
"""

JS = """\
"use strict";
(function () {
  // Sorting: numbers as numbers (a cell that starts with one), "–" (not measured) always last.
  var NUMBER = /^[-+]?(\\d+\\.?\\d*|\\.\\d+)(e[-+]?\\d+)?/i;
  function key(cell) {
    var text = cell.textContent.trim();
    if (text === "" || text === "\\u2013") return null;
    var m = NUMBER.exec(text);
    return m ? parseFloat(m[0]) : text;
  }
  function sortBy(table, th, col) {
    var body = table.tBodies[0];
    if (!body) return;
    var descending = th.getAttribute("aria-sort") === "ascending";
    var rows = Array.prototype.map.call(body.rows, function (row, i) {
      return { row: row, i: i, key: row.cells[col] ? key(row.cells[col]) : null };
    });
    var numeric = rows.every(function (r) { return r.key === null || typeof r.key === "number"; });
    rows.sort(function (a, b) {
      if (a.key === null || b.key === null) {
        return a.key === b.key ? a.i - b.i : (a.key === null ? 1 : -1);
      }
      var d = numeric ? a.key - b.key
        : String(a.key).localeCompare(String(b.key), undefined, { numeric: true });
      return (descending ? -d : d) || a.i - b.i;
    });
    rows.forEach(function (r) { body.appendChild(r.row); });
    Array.prototype.forEach.call(th.parentNode.cells, function (h) {
      h.removeAttribute("aria-sort");
    });
    th.setAttribute("aria-sort", descending ? "descending" : "ascending");
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    var head = table.tHead && table.tHead.rows[0];
    if (!head) return;
    Array.prototype.forEach.call(head.cells, function (th, col) {
      th.title = "sort by this column";
      th.addEventListener("click", function () { sortBy(table, th, col); });
    });
  });

  // Charts: drawn when they come into view.
  var charts = document.querySelectorAll("div.chart[data-figure]");
  if (!charts.length) return;
  if (typeof Plotly === "undefined") {
    charts.forEach(function (div) { div.textContent = "This chart needs assets/plotly.min.js."; });
    return;
  }
  function draw(div) {
    var figure = JSON.parse(document.getElementById(div.dataset.figure).textContent);
    Plotly.newPlot(div, figure.data, figure.layout,
      { displayModeBar: false, responsive: true });
  }
  if (!("IntersectionObserver" in window)) { charts.forEach(draw); return; }
  var seen = new IntersectionObserver(function (entries) {
    entries.forEach(function (e) {
      if (e.isIntersecting) { seen.unobserve(e.target); draw(e.target); }
    });
  }, { rootMargin: "600px 0px" });
  charts.forEach(function (div) { seen.observe(div); });
})();
"""


def write(site: Path, *, plotly: bool) -> list[Path]:
    """Write the shared files into `site`/assets/ (plotly.js only for charts); their paths."""
    folder = site / ASSETS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    written = [folder / STYLE, folder / SCRIPT]
    written[0].write_text(CSS)
    written[1].write_text(JS)
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
