"""The front page: the answer per workload (the README's `summary` and `found` blocks, made afresh),
the run of record's headline table and figure, the latest runs with their verdicts, and each GPU
model's history."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from bench.faults import UsageError
from bench.publish import index, readme
from bench.publish.site import markup, run_pages
from bench.publish.site.grids import Pair
from bench.publish.site.history_page import History
from bench.publish.site.layout import FRONT, RUNS_PAGE, Layout
from bench.store import results
from bench.store.tree import Run, Tree
from bench.text import tables

ANSWERS = ("summary", "found")
"""The README blocks that answer for a workload."""
LATEST = 10
"""How many of the newest runs the front page lists."""
FIGURE = "throughput.png"


@dataclass(frozen=True)
class Piece:
    """Markdown written in `source_dir` (where its relative links start)."""

    text: str
    source_dir: Path


def workload(run: Run) -> str:
    """A timing run's workload in words: its model, preset (else sizes) and GPU model."""
    cfg = run.env.get("config", {})
    sizes = "×".join(map(str, cfg.get("sizes", {}).values()))  # older code's too: `store.schema`
    return f"{cfg.get('model', 'mlp')} {cfg.get('preset') or sizes} on {run.env.get('gpu')}"


def _blocks(path: Path) -> tuple[Path, list[readme.Block]]:
    """A page's generated blocks; none where it cannot be read."""
    try:
        return path, readme.blocks(path.read_text(encoding="utf-8"))
    except (OSError, UsageError):
        return path, []


def _pages(results_dir: Path) -> list[tuple[Path, list[readme.Block]]]:
    """The README's blocks, then each docs/*.md page's: a built-in model's answer is in
    docs/own-model.md, where it went when the README made room for the model zoo's table."""
    docs = sorted((results_dir.parent / "docs").glob("*.md"))
    return [_blocks(page) for page in (results_dir.parent / index.PROJECT_README, *docs)]


def _generate(block: readme.Block, root: Path) -> Piece | None:
    try:
        return Piece(readme.generate(block, root), root)
    except UsageError as exc:  # `readme --check` is where a bad block fails; here it is left out
        print(f"ampbench: warning: {block.label} left off the front page: {exc}", file=sys.stderr)
        return None


def _block(kind: str, run: Run, results_dir: Path, **options: str) -> readme.Block:
    rel = run.path.resolve().relative_to(results_dir.resolve()).as_posix()
    return readme.Block(kind, rel, options, "", 0)


def answers(timing: list[Run], results_dir: Path) -> list[tuple[str, Piece]]:
    """(workload, its answer) for every workload of the timing runs, the README's blocks first."""
    by_path = {r.path.resolve(): r for r in timing}
    out: dict[str, Piece] = {}
    for path, blocks in _pages(results_dir):
        for block in blocks:
            run = by_path.get((path.parent / block.run).resolve())
            if block.kind in ANSWERS and run is not None and workload(run) not in out:
                piece = _generate(block, path.parent)
                if piece is not None:
                    out[workload(run)] = piece
    for run in reversed(timing):  # newest first
        if workload(run) not in out and "ended" in run.env:
            piece = _generate(_block("found", run, results_dir), results_dir)
            if piece is not None:
                out[workload(run)] = piece
    return list(out.items())


def record(timing: list[Run], results_dir: Path) -> tuple[str, Piece] | None:
    """(heading, the headline block) of the run of record, else of the newest timing run."""
    path, blocks = _blocks(results_dir.parent / index.PROJECT_README)
    named = index.run_of_record(path, Tree(results_dir))
    for block in blocks:
        if block.kind == "headline" and named and (path.parent / block.run).resolve() == named:
            piece = _generate(block, path.parent)
            if piece is not None:
                return "The run of record", piece
    finished = [r for r in timing if "ended" in r.env]
    if not finished:
        return None
    run = finished[-1]
    options = {"figure": FIGURE} if (run.path / FIGURE).is_file() else {}
    piece = _generate(_block("headline", run, results_dir, **options), results_dir)
    return ("The newest timing run", piece) if piece else None


def latest(runs: list[Run], results_dir: Path, pairs: dict[str, Pair]) -> str:
    """The newest runs, a row each, with a timing run's verdicts against the run before it."""
    tree = Tree(results_dir)
    rows = []
    # The kinds of run the index lists (an `ab` comparison has a page of its own, no row).
    listed = [r for r in runs if r.kind in index.SECTIONS and r.kind != index.COMPARISON]
    for run in listed[::-1][:LATEST]:
        cells = index.row(run, results_dir, tree)
        passed = index.SECTIONS[run.kind][1]
        pair = pairs.get(str(run.path))
        rows.append(
            {
                "date (UTC)": cells["date (UTC)"],
                "kind": run.kind,
                "GPU": cells["GPU"],
                "commit": cells["commit"],
                "model": cells["model"],
                "grid": cells["grid"],
                "ok": cells[passed],
                "report": cells["report"],
                "against the run before on its grid": _verdicts(run, pair, results_dir),
            }
        )
    return tables.markdown(pd.DataFrame(rows))


def _verdicts(run: Run, pair: Pair | None, results_dir: Path) -> str | None:
    """The verdict counts, linking the section of the run's page that tables them."""
    if pair is None:
        return None
    report = (run.path / results.REPORT).relative_to(results_dir).as_posix()
    return f"[{pair.words()}]({report}#{run_pages.AGAINST_ID})"


def histories(found: list[History]) -> str:
    rows = [
        {
            "GPU model": f"[{h.gpu}]({markup.SITE}:{h.page})",
            "revisions": h.revisions,
            "cases": h.cases,
            "charted": h.charts,
            "cases slower than the revision before": f"{h.slower} slower" if h.slower else "none",
            "using more memory than the revision before": (
                f"{h.more_memory} more memory" if h.more_memory else "none"
            ),
        }
        for h in found
    ]
    return tables.markdown(pd.DataFrame(rows))


def body(
    runs: list[Run],
    results_dir: Path,
    pairs: dict[str, Pair],
    found: list[History],
    layout: Layout,
) -> str:
    """The front page's HTML."""
    timing = [r for r in runs if r.kind == "timing"]
    pieces = [
        Piece(
            "# Results\n\nWhat the published runs measured: the answer for each workload, the "
            "run of record, the newest runs and the step time of each case across revisions. "
            f"[Every run]({markup.SITE}:{RUNS_PAGE}) has a page with its report's tables and "
            "figures.\n",
            results_dir,
        )
    ]
    found_answers = answers(timing, results_dir)
    if found_answers:
        pieces.append(Piece("## The answer\n", results_dir))
        pieces += [Piece(f"### {name}\n\n{p.text}", p.source_dir) for name, p in found_answers]
    head = record(timing, results_dir)
    if head is not None:
        heading, piece = head
        pieces.append(Piece(f"## {heading}\n\n{piece.text}", piece.source_dir))
    pieces.append(
        Piece(
            f"## Latest runs\n\n{latest(runs, results_dir, pairs)}\n\n"
            f"[Every run]({markup.SITE}:{RUNS_PAGE}), by kind.\n",
            results_dir,
        )
    )
    if found:
        pieces.append(Piece(f"## Step time across revisions\n\n{histories(found)}\n", results_dir))
    return "\n".join(markup.to_html(p.text, layout, p.source_dir, FRONT) for p in pieces)
