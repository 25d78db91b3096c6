"""Is the committed index fresh, and results/ light enough for git (`./run_bench.sh index --check`):
the index against the run folders git tracks (`check`), and the tracked files against
`LIMIT_MB` in all and `FILE_LIMIT_MB` each (`weight`)."""

from __future__ import annotations

import re
import sys
from itertools import zip_longest
from pathlib import Path

from bench.publish.index import FILE_LIMIT_MB, INDEX, LIMIT_MB, render, unreported
from bench.store import paths, results
from bench.store.tree import Run, Tree, run_folders, tracked_files

MB = 10**6


def _sizes(results_dir: Path, files: frozenset[Path] | None) -> dict[Path, int]:
    # A link counts as itself, as git stores it (the path it names) and `du -b` counts it: a
    # figure kept once and linked from another folder weighs once (docs/results-folder.md).
    found = files if files is not None else results_dir.rglob("*")
    return {p: p.lstat().st_size for p in found if p.is_symlink() or p.is_file()}


def weight(results_dir: Path, files: frozenset[Path] | None = None) -> tuple[str, str | None]:
    """What the files under `results_dir` weigh (`files`: only those), in a clause, and one line
    naming what is over `LIMIT_MB` or `FILE_LIMIT_MB` (None when nothing is)."""
    sizes = _sizes(results_dir, files)
    total = sum(sizes.values())
    largest = max(sizes, key=sizes.__getitem__) if sizes else None
    biggest = sizes.get(largest, 0) if largest else 0
    shown = paths.shown(results_dir)
    said = f"{shown}/ weighs {total / MB:.1f} MB (at most {LIMIT_MB})" + (
        f", its largest file {biggest / MB:.1f} MB (at most {FILE_LIMIT_MB})" if largest else ""
    )
    over = sorted((p for p, n in sizes.items() if n > FILE_LIMIT_MB * MB), key=str)
    if over:
        name = f"{shown}/{over[0].relative_to(results_dir).as_posix()}"
        more = f" (and {len(over) - 1} more)" if len(over) > 1 else ""
        return said, (
            f"{name} weighs {sizes[over[0]] / MB:.1f} MB{more}, over the {FILE_LIMIT_MB} MB a "
            "file of results/ may: keep it compressed as a study writes its tables "
            "(docs/results-folder.md)"
        )
    if total > LIMIT_MB * MB:
        return said, (
            f"{shown}/ weighs {total / MB:.1f} MB, over the {LIMIT_MB} MB it may: its "
            f"largest file is {largest.relative_to(results_dir).as_posix()} "
            f"({biggest / MB:.1f} MB); see "
            "docs/results-folder.md"
        )
    return said, None


FIGURE = re.compile(r"!\[[^\]]*\]\(([^()\s/]+\.png)\)")
"""A figure a report.md shows from its own folder: `![throughput](throughput.png)`."""


def unpublished(results_dir: Path, tree: Tree, index_text: str) -> str | None:
    """One line naming the first run folder the index lists that git holds without its report.md
    or without a figure its report shows: a published folder is kept whole, never stripped to fit
    the weight (docs/results-folder.md); None where every one is whole."""
    for run in run_folders(results_dir, tree=tree, nested=True):
        shown = f"{paths.shown(results_dir)}/{run.path.relative_to(results_dir).as_posix()}"
        if unreported(run, results_dir) in index_text:
            return (
                f"{shown} is published without its report.md: ./run_bench.sh report {shown} "
                "writes it again from the folder's data"
            )
        report = run.path / results.REPORT
        shows = FIGURE.findall(report.read_text()) if tree.has(report) else []
        lacking = [f for f in shows if not tree.has(run.path / f)]
        if lacking:
            return f"{shown} is published without {lacking[0]}, which its report.md shows"
    return None


def _named(text: str, run: Run, base: Path) -> bool:
    """Whether an index's `text` has a row for `run` (its report's link, or its name)."""
    rel = run.path.relative_to(base).as_posix()
    return f"]({rel}/{results.REPORT})" in text or unreported(run, base) in text


def check(results_dir: Path = paths.RESULTS) -> str | None:
    """None when `results_dir`/README.md is what the run folders git tracks say and they are
    within their weight; else one line naming what is stale or too heavy. A user's own untracked
    run never counts; where git cannot list files, says so on stderr and counts every folder."""
    files = tracked_files(results_dir)
    if files is None:
        print(
            f"ampbench: git cannot list the files of {paths.shown(results_dir)}; checking every "
            "folder in it",
            file=sys.stderr,
        )
    path = results_dir / INDEX
    shown = f"{paths.shown(results_dir)}/{INDEX}"
    if not path.is_file():
        return f"{shown} is missing: run ./run_bench.sh index"
    tree = Tree(results_dir, files)
    have, want = path.read_text(), render(results_dir, tree=tree)
    if have == want:
        return unpublished(results_dir, tree, want) or weight(results_dir, files)[1]
    counted = run_folders(results_dir, tree=tree, nested=True)
    # Only a folder the fresh index names can be missing from the old one (an `ab` comparison's
    # folder, for one, is listed through its parent, not by its own report).
    lacks = [
        r.path.name
        for r in counted
        if _named(want, r, results_dir) and not _named(have, r, results_dir)
    ]
    extra = [
        r.path.name
        for r in run_folders(results_dir, nested=True)
        if r not in counted and _named(have, r, results_dir)
    ]
    if lacks:
        what = f"it lacks {lacks[0]}" + (f" and {len(lacks) - 1} more" if len(lacks) > 1 else "")
    elif extra:
        what = f"it lists {extra[0]}, which is not a run folder git tracks" + (
            f" (and {len(extra) - 1} more)" if len(extra) > 1 else ""
        )
    else:
        pairs = zip_longest(have.splitlines(), want.splitlines())
        line = next((i for i, (a, b) in enumerate(pairs, 1) if a != b), 1)  # or a last newline
        what = f"line {line} differs from what the folders say"
    return f"{shown} is stale: {what}; run ./run_bench.sh index"
