"""Run folders that left results/, each with the last commit that held it: results/retired.json,
which `./run_bench.sh index` keeps from git's history and the index renders as its "Earlier
folders" (docs/results-folder.md). The index reads the file, never git, so that a clone without
the history (a shallow CI checkout) renders the same page."""

from __future__ import annotations

import json
from pathlib import Path

from bench.store import results
from bench.store import tree as runs

RETIRED = "retired.json"
"""{folder name: the full sha of the last commit whose tree held it}, beside the index."""


def read(results_dir: Path) -> dict[str, str]:
    """The folders results/retired.json names, with their last commits; {} without the file."""
    path = results_dir / RETIRED
    if not path.is_file():
        return {}
    data = json.loads(path.read_text())
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise ValueError(f"{path}: not an object of folder names to commits")
    return data


def _top_folder(path: str) -> str | None:
    """`RUN` of a path `RUN/env.json` (relative to results/): a folder of results/ itself."""
    parts = path.strip().split("/")
    return parts[0] if len(parts) == 2 and parts[1] == results.ENV else None


def from_git(results_dir: Path) -> dict[str, str] | None:
    """What git says: each top-level run folder deleted from `results_dir` (its env.json gone),
    with the last commit that held it: the first parent of the newest commit that deleted it, or
    HEAD for one deleted since (staged or not). None where git cannot say."""
    deleted = ("--diff-filter=D", "--name-only", "--format=@%P")
    log = runs.git(results_dir, "log", "--relative", *deleted, "--", ".")
    head = runs.git(results_dir, "rev-parse", "HEAD")
    in_head = runs.git(results_dir, "ls-tree", "-r", "--name-only", "HEAD", "--", ".")
    if log is None or head is None or in_head is None:
        return None
    found: dict[str, str] = {}
    parent = ""
    for line in log.splitlines():
        if line.startswith("@"):
            parent = line[1:].split(" ")[0]  # a root commit deletes nothing: it has a parent
        elif (name := _top_folder(line)) and parent:
            found.setdefault(name, parent)  # newest first: the latest deletion wins
    for line in in_head.splitlines():
        name = _top_folder(line)
        if name and not (results_dir / name / results.ENV).is_file():
            found[name] = head.strip()
    return found


def refresh(results_dir: Path) -> dict[str, str]:
    """Add what git's history says to results/retired.json and write it where that changes it;
    an entry is never dropped (a shallow clone's history is short), only one whose folder is
    back in results/. Returns the folders it names."""
    have = read(results_dir)
    now = {**(from_git(results_dir) or {}), **have}
    now = {k: now[k] for k in sorted(now) if not (results_dir / k / results.ENV).is_file()}
    if now != have:
        (results_dir / RETIRED).write_text(json.dumps(now, indent=1) + "\n")
    return now
