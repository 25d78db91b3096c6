"""Where the project lives, and how a committed file names a path.

A results folder travels: it is made on a lent GPU box and committed here. A path of that box
inside the project (`/home/someone/ampbench/results`) means nothing elsewhere, so what a folder
records (the command in env.json, the report) names such a path relative to the project root. A
path outside the project (`/tmp/s/results`) is kept as it is: it says where the run was written.
Needs no torch.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
"""The project's root: the folder that holds `bench/`."""
RESULTS = ROOT / "results"
"""The project's own results folder: the one its index (results/README.md) describes."""


def shown(path: Path | str, root: Path = ROOT) -> str:
    """`path` as a committed file should show it: relative to `root` when inside it (`results`,
    `results/lr-sweep`), otherwise absolute. A relative `path` is taken as relative to the
    current directory."""
    resolved = Path(path).expanduser().resolve()
    try:
        return str(resolved.relative_to(root.resolve()))
    except ValueError:
        return str(resolved)


def in_results(path: Path | str, results: Path | None = None) -> bool:
    """True when `path` is `results` (default: the project's results folder) or lies inside it."""
    resolved, parent = Path(path).resolve(), (results or RESULTS).resolve()
    return resolved == parent or parent in resolved.parents
