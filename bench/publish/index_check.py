"""Is the committed index fresh? `./run_bench.sh index --check` (`check`) says whether
results/README.md is what the run folders that git tracks say (`bench.publish.runs.Tree` of
`tracked_files`): a user's own run, finished or not, is not one of them, so it cannot make the
check fail unless it has been written into the index.
"""

from __future__ import annotations

import sys
from itertools import zip_longest
from pathlib import Path

from bench.publish.index import INDEX, render, unreported
from bench.publish.runs import Run, Tree, run_folders, tracked_files
from bench.store import paths, results


def _named(text: str, run: Run, base: Path) -> bool:
    """Whether an index's `text` has a row for `run` (its report's link, or its name)."""
    rel = run.path.relative_to(base).as_posix()
    return f"]({rel}/{results.REPORT})" in text or unreported(run, base) in text


def check(results_dir: Path = paths.RESULTS) -> str | None:
    """None when `results_dir`/README.md is what the run folders git tracks say; else one line
    naming what is stale. Folders git does not track (a user's own run, finished or not) are
    left out. Where git cannot list the tracked files, says so on stderr and counts every
    folder."""
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
        return None
    counted = run_folders(results_dir, tree=tree)
    lacks = [r.path.name for r in counted if not _named(have, r, results_dir)]
    extra = [
        r.path.name
        for r in run_folders(results_dir)
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
