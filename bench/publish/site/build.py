"""Building the whole site from a results folder, page by page, into a new folder that takes the
place of the old site at the end (`bench.publish.site.output`)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from bench.faults import UsageError
from bench.publish import index
from bench.publish.site import assets, front, grids, history_page, markup, output, run_pages
from bench.publish.site.layout import FRONT, RUNS_PAGE, Layout
from bench.store import paths, results
from bench.store.tree import run_folders
from bench.verdicts import history_points


@dataclass(frozen=True)
class Built:
    """What a build made: the site's folder, its front page, how many pages and bytes."""

    folder: Path
    front: Path
    pages: int
    size_bytes: int


def _write(results_dir: Path, site: Path) -> int:
    """Every page of the site of `results_dir`, written into `site`; returns how many."""
    runs = run_folders(results_dir)
    if not runs:
        raise UsageError(f"{results_dir} holds no run folder to publish")
    layout = Layout(results_dir)
    sources = [s for run in runs for s in run_pages.register(run, layout)]
    pairs = grids.pairs([r for r in runs if r.kind == "timing"])
    gpus = [g for g in history_points.gpu_models(results_dir) if g != "cpu"]
    histories = [history_page.build(results_dir, gpu, layout) for gpu in gpus]
    nav = assets.Nav(tuple((h.gpu, h.page) for h in histories))
    shown = paths.shown(results_dir)

    def write(where: PurePosixPath, title: str, body: str, *, charts: bool = False) -> None:
        text = assets.document(where, title, body, nav, charts=charts, source=shown)
        assets.write_page(site, where, text)

    for source in sources:
        pair = pairs.get(str(source.run.path)) if source.report else None
        body = run_pages.body(source, sources, pair, layout)
        name = source.path.parent.relative_to(results_dir).as_posix()
        if source.path.name != results.REPORT:  # a comparison kept in the folder
            name = f"{name}: {source.path.stem}"
        write(source.page, name, body)
    every = markup.to_html(index.render(results_dir), layout, results_dir, RUNS_PAGE)
    write(RUNS_PAGE, "Every run", every)
    for h in histories:
        write(h.page, f"History: {h.gpu}", h.body, charts=True)
    write(FRONT, "Results", front.body(runs, results_dir, pairs, histories, layout))
    for dest, src in layout.copies.items():
        target = site.joinpath(*dest.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, target)
    assets.write(site, plotly=bool(histories))
    return len(sources) + 2 + len(histories)


def build(results_dir: Path, out: Path) -> Built:
    """The site of `results_dir` at `out` (replacing the site there, never anything else)."""
    results_dir = results_dir.resolve()
    folder = output.check(out, results_dir)
    new = output.staging(folder)
    try:
        pages = _write(results_dir, new)
        output.replace(new, folder)
    except BaseException:
        shutil.rmtree(new, ignore_errors=True)
        raise
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    return Built(folder, folder / str(FRONT), pages, size)
