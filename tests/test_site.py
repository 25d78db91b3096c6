"""`ampbench publish`: a static site from results folders that the test makes itself (two timing
runs of one grid, the second with a regression, and a numerics study in a group folder). The
pages show the reports' own tables and figures, every link stays inside the site and nothing is
fetched; a folder publishing did not make is never replaced. Headless Chromium then opens the
front page, a run page and the history page from the file system and checks that they render
their tables and charts with no console error, keeping a screenshot of each under the site's
screenshots/ folder."""

from __future__ import annotations

import html.parser
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.cli import main
from bench.publish import render, report
from bench.publish.site import missing, output
from bench.store import results
from bench.store import tree as runs
from tests.browser import CHROMIUM, Browser
from tests.stored import small_grid, write_numerics, write_run

H200 = "NVIDIA H200"
A = "20261129T100000Z_NVIDIA-H200_aaaaaaa"
B = "20261130T100000Z_NVIDIA-H200_bbbbbbb"
STUDY = "lr-sweep/20261129T120000Z_NVIDIA-H200_aaaaaaa_numerics"
SLOW = ("bf16-amp", 32, "fused")
"""The case that is 30% slower in B than in A."""

needs_site = pytest.mark.skipif(
    bool(missing()),
    reason=f"the `site` extra is not installed ({', '.join(missing())}): "
    "pip install 'ampbench[site]'",
)


def _grid(slower: float) -> list[dict]:
    rows = small_grid()
    for row in rows:
        if (row["mode"], row["batch_size"], row["optimizer"]) == SLOW:
            row["total_ms"] *= slower
    return rows


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """A project (README naming B the run of record, results/ with A, B and a study) and the
    site `ampbench publish` made of it."""
    if missing():
        pytest.skip("the `site` extra is not installed")
    project = tmp_path_factory.mktemp("project")
    res = project / "results"
    for name, slower, day, commit in ((A, 1.0, "29", "a"), (B, 1.3, "30", "b")):
        write_run(res / name, _grid(slower), gpu=H200, commit=commit * 40,
                  started=f"2026-11-{day}T10:00:00+00:00", seed=int(day))  # fmt: skip
    # B's report as `ampbench report` renders it, figures and all; A's without figures (they
    # take seconds to draw, and one run's show what the site does with them).
    render.render(res / B)
    text = report.render(results.load(res / A), results.read_env(res / A))
    (res / A / results.REPORT).write_text(text)
    write_numerics(res / STUDY)
    (project / "README.md").write_text(
        f"# P\n\n<!-- ampbench:headline results/{B} figure=throughput.png -->\n"
        "<!-- /ampbench:headline -->\n"
    )
    out = project / "site"
    assert main(["publish", "--results-dir", str(res), "--output", str(out)]) == 0
    return out


def _page(site: Path, run: str) -> Path:
    return site / "runs" / run / "index.html"


class _Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, str, str]] = []  # (tag, attribute, value)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found += [(tag, k, v) for k, v in attrs if k in ("href", "src") and v is not None]


# --- what the site holds ---------------------------------------------------------------------


@needs_site
def test_a_page_per_run_the_runs_the_history_and_the_assets_once(site):
    assert (site / output.MARKER).is_file()
    for page in ("index.html", "runs.html", "history/NVIDIA-H200.html"):
        assert (site / page).is_file(), page
    assert _page(site, A).is_file() and _page(site, B).is_file() and _page(site, STUDY).is_file()
    assert [p.name for p in site.rglob("plotly*.js")] == ["plotly.min.js"]
    assert (site / "assets" / "plotly.min.js").stat().st_size > 1_000_000


@needs_site
def test_a_run_page_shows_its_reports_tables_and_figures(site):
    run = site.parent / "results" / B
    text = (run / results.REPORT).read_text()
    page = _page(site, B).read_text()
    tables = len(re.findall(r"^\|[:-]", text, re.M))
    figures = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    # The report's tables, and the comparison against A at the end.
    assert page.count('<table class="sortable">') == tables + 1
    assert figures and all(f'src="{name}"' in page for name in figures)
    for name in figures:  # the very files of the run folder
        assert (_page(site, B).parent / name).read_bytes() == (run / name).read_bytes()


@needs_site
def test_every_link_stays_in_the_site_and_nothing_is_fetched(site):
    pages = list(site.rglob("*.html"))
    assert len(pages) >= 6
    for page in pages:
        parser = _Links()
        parser.feed(page.read_text())
        for tag, _, value in parser.found:
            if value.startswith(("#", "data:")):
                continue
            if tag == "a" and value.startswith(("http://", "https://")):
                continue  # a link the reader follows, never a fetch
            assert "://" not in value and not value.startswith("/"), (page, value)
            target = (page.parent / value.split("#")[0]).resolve()
            assert target.is_file() and site.resolve() in target.parents, (page, value)


@needs_site
def test_the_regression_stands_out(site):
    page = _page(site, B).read_text()
    assert "Against the previous run of the same grid" in page and A in page
    assert len(re.findall(r'<td class="slower"[^>]*>slower</td>', page)) == 1
    front = (site / "index.html").read_text()
    assert re.search(r'<td class="slower"[^>]*><a href="runs/[^"]+#against-[^"]+">1 slower', front)
    history = (site / "history" / "NVIDIA-H200.html").read_text()
    assert history.count('class="chart-card regressed"') == 1
    assert history.count('class="chart" data-figure=') == len(small_grid())


@needs_site
def test_the_front_page_has_the_answer_the_headline_and_the_latest_runs(site):
    front = (site / "index.html").read_text()
    df = results.load(site.parent / "results" / B)
    assert "mlp tiny on NVIDIA H200" in front  # the newest run's findings, no README block
    assert report.headline(df).splitlines()[0].rstrip(":") in front
    assert "The run of record" in front and f'src="runs/{B}/throughput.png"' in front
    assert front.count(f'href="runs/{B}/index.html"') >= 2 and f"runs/{STUDY}/index.html" in front


# --- what publishing refuses -------------------------------------------------------------------


@needs_site
def test_a_second_publish_replaces_the_site_whole(site, tmp_path, capsys):
    (site / "stale.html").write_text("old")
    res = site.parent / "results"
    assert main(["publish", "--results-dir", str(res), "--output", str(site)]) == 0
    assert not (site / "stale.html").exists() and (site / "index.html").is_file()
    assert not [p for p in site.parent.iterdir() if p.name.startswith(".site.")]


@pytest.mark.parametrize("case", ["file", "foreign", "inside", "no-results"])
def test_bad_input_is_one_line_exit_2_and_touches_nothing(case, tmp_path, capsys):
    res = tmp_path / "results"
    write_run(res / A, small_grid()[:2], gpu=H200)
    out = tmp_path / "out"
    if case == "file":
        out.write_text("mine")
    elif case == "foreign":
        out.mkdir()
        (out / "notes.txt").write_text("mine")
    elif case == "inside":
        out = res / "site"
    elif case == "no-results":
        res = tmp_path / "nothing"
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert main(["publish", "--results-dir", str(res), "--output", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ampbench: error:")
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_without_the_site_extra_one_line_names_what_is_missing(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr("bench.publish.site.missing", lambda: ["plotly"])
    res = tmp_path / "results"
    res.mkdir()
    assert main(["publish", "--results-dir", str(res), "--output", str(tmp_path / "out")]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "plotly" in line and "ampbench[site]" in line
    assert not (tmp_path / "out").exists()


@needs_site
def test_the_site_imports_no_torch():
    names = ["bench.publish.site.build"]  # which imports every other module of the site
    code = "import importlib, sys\nfor n in sys.argv[1:]: importlib.import_module(n)\n"
    code += "print(sorted(m for m in sys.modules if m.split('.')[0] == 'torch'))"
    out = subprocess.run([sys.executable, "-c", code, *names], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


# --- in a browser ------------------------------------------------------------------------------

ROWS = "document.querySelectorAll('table.sortable tbody tr').length"
"""Rows of the tables as the browser shows them: as many as the page's HTML holds."""
IMAGES = "[...document.images].filter(i => i.complete && i.naturalWidth > 0).length"
BROKEN = "[...document.images].filter(i => !(i.complete && i.naturalWidth > 0)).length"
CHARTS = "document.querySelectorAll('.js-plotly-plot .main-svg').length"
SORT = """(() => {
  const table = document.querySelector('table.sortable');
  const col = [...table.tHead.rows[0].cells].findIndex(th => th.textContent.includes('step ms'));
  const values = () => [...table.tBodies[0].rows].map(r => parseFloat(r.cells[col].textContent));
  table.tHead.rows[0].cells[col].click();
  const up = values();
  table.tHead.rows[0].cells[col].click();
  const down = values();
  const sorted = [...up].sort((a, b) => a - b);
  return JSON.stringify(up) === JSON.stringify(sorted)
    && JSON.stringify(down) === JSON.stringify([...sorted].reverse());
})()"""


def _rows(page: Path) -> int:
    """Rows in the bodies of the page's tables, as its HTML has them."""
    text = page.read_text()
    return sum(body.count("<tr") for body in re.findall(r"<tbody>(.*?)</tbody>", text, re.S))


@needs_site
@pytest.mark.skipif(
    not CHROMIUM.is_file(),
    reason=f"headless Chromium is not installed ({CHROMIUM}): `.ci/run` installs Debian's "
    "`chromium` package, or `apt-get install chromium`",
)
def test_pages_render_in_chromium_with_no_console_error(site):
    start = time.monotonic()
    shots = site / "screenshots"
    with Browser(width=1280, height=1600) as browser:
        browser.open((site / "index.html").as_uri())
        assert browser.eval(ROWS) == _rows(site / "index.html") >= 6  # headline, latest runs
        assert browser.eval(IMAGES) >= 1 and browser.eval(BROKEN) == 0
        browser.screenshot(shots / "front.png")

        browser.open(_page(site, B).as_uri())
        assert browser.eval(ROWS) == _rows(_page(site, B)) >= len(small_grid())
        assert browser.eval(IMAGES) >= 4 and browser.eval(BROKEN) == 0
        browser.screenshot(shots / "run.png")
        assert browser.eval(SORT) is True  # a click on a header sorts by number

        browser.open((site / "history" / "NVIDIA-H200.html").as_uri())
        browser.eval("document.getElementById('charts').scrollIntoView()")
        assert browser.wait_for(f"{CHARTS} >= 4") is True  # plotly drew the charts in view
        browser.screenshot(shots / "history.png")
        errors = browser.errors()
    assert errors == []
    for name in ("front", "run", "history"):
        assert (shots / f"{name}.png").read_bytes().startswith(b"\x89PNG")
    print(f"screenshots in {shots} ({time.monotonic() - start:.1f} s in Chromium)")


@needs_site
def test_a_docs_page_answers_for_a_workload_the_readme_leaves_out(tmp_path):
    from bench.publish.site import front
    from bench.store import tree as runs

    res = tmp_path / "results"
    for name, day in ((A, "29"), (B, "30")):
        write_run(res / name, small_grid(), gpu=H200, started=f"2026-11-{day}T10:00:00+00:00")
    timing = [r for r in runs.run_folders(res) if r.kind == "timing"]
    ((name, piece),) = front.answers(timing, res)  # one workload, and no page names a run
    assert name == "mlp tiny on NVIDIA H200" and f"[`{B}`]({B})" in piece.text
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "models.md").write_text(
        f"<!-- ampbench:found ../results/{A} -->\n<!-- /ampbench:found -->\n"
    )
    ((name, piece),) = front.answers(timing, res)  # the page's block, not the newest run
    assert f"[`{A}`](../results/{A}" in piece.text and piece.source_dir == tmp_path / "docs"


@needs_site
def test_the_latest_runs_leave_out_an_ab_comparison_which_has_a_page_of_its_own(tmp_path):
    from bench.publish.site import front as front_page  # imports markdown and plotly

    write_run(tmp_path / A, small_grid(), gpu=H200, commit="a" * 40)
    ab = tmp_path / "20261201T000000Z_NVIDIA-H200_ab"  # newer than A: first in the list
    ab.mkdir()
    env = {"kind": "ab", "device": "cuda", "gpu": H200, "started": "2026-12-01T00:00:00+00:00"}
    (ab / results.ENV).write_text(json.dumps(env))
    found = runs.run_folders(tmp_path)
    assert {r.kind for r in found} == {"timing", "ab"}
    table = front_page.latest(found, tmp_path, {})
    assert A in table and ab.name not in table
