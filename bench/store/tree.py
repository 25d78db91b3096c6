"""What a results directory holds, as publishing reads it: its run folders (each with its kind and
env.json) and pytest-benchmark saves, seen on disk or as the files git tracks (`Tree`). CPU runs
are never results; folders with a damaged env.json are named apart (`damaged_folders`)."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

from bench.store import paths, results, schema
from bench.store.run_env import RunEnv

SESSIONS_DIR, NOTES = "sessions", "NOTES.md"
"""Session logs and the hand-written notes on the runs (results/sessions/NOTES.md)."""
HISTORY_DIR = "history"
"""Where `bench history` writes (results/history/)."""
DAMAGED = "damaged"
"""The kind of a folder whose env.json cannot be read: warned about, and left out."""
UNKNOWN = "unknown"
"""The kind of a folder whose env.json does not say what made it."""


@dataclass(frozen=True)
class Run:
    """A run folder: where it is, what kind of run made it (a key of `bench.store.schema.KINDS`,
    `UNKNOWN` or `DAMAGED`), and its env.json."""

    path: Path
    kind: str
    env: RunEnv


@dataclass(frozen=True)
class Tree:
    """What publishing sees of a results folder: every file on disk, or (`files` given) only
    those files, as `index --check` uses it with the files git tracks (`tracked_files`)."""

    root: Path
    files: frozenset[Path] | None = None

    def has(self, path: Path) -> bool:
        if not path.exists():
            return False
        if self.files is None:
            return True
        return path in self.files or any(path in f.parents for f in self.files)


def git(folder: Path, *args: str) -> str | None:
    """git's output for `args` run in `folder`, or None when git cannot say (git missing, or
    `folder` not in a repository)."""
    try:
        out = subprocess.run(
            ["git", "-c", "safe.directory=*", *args],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout


def tracked_files(folder: Path) -> frozenset[Path] | None:
    """The files under `folder` that git tracks (staged ones included), or None when git cannot
    say (git missing, or `folder` not in a repository)."""
    listed = git(folder, "ls-files", "-z", "--", ".")
    if listed is None:
        return None
    return frozenset(folder / p for p in listed.split("\0") if p)


def run_at(path: Path, tree: Tree) -> Run | None:
    """The run in folder `path`, or None without env.json; a damaged one makes a `DAMAGED` run
    naming the damage, so one bad folder costs nothing else."""
    if not tree.has(path / results.ENV):
        return None
    try:
        env = results.read_env(path)
    except results.CorruptFolder as exc:
        return Run(path=path, kind=DAMAGED, env=RunEnv(damage=str(exc)))
    return Run(path=path, kind=schema.kind_of(env, path) or UNKNOWN, env=env)


def subfolders(tree: Tree) -> list[Path]:
    """Folders of `tree` other than the history and the sessions, which hold no runs."""
    skip = {HISTORY_DIR, SESSIONS_DIR}
    return sorted(
        p for p in tree.root.iterdir() if p.is_dir() and p.name not in skip and tree.has(p)
    )


def run_folders(
    results_dir: Path = paths.RESULTS, *, tree: Tree | None = None, nested: bool = False
) -> list[Run]:
    """Every run folder directly in `results_dir` or one level below, oldest first (`nested`: at
    any depth below folders that hold no run, never inside one). CPU runs (smoke tests, never
    results) and damaged folders (`damaged_folders`) are left out."""
    found = [r for r in _folders(results_dir, tree, nested) if r.kind != DAMAGED]
    found = [r for r in found if r.env.get("device") != "cpu"]
    return sorted(found, key=lambda r: (str(r.env.get("started", "")), r.path.name))


def damaged_folders(results_dir: Path = paths.RESULTS, *, tree: Tree | None = None) -> list[Run]:
    """The run folders that `run_folders` leaves out because their env.json is damaged."""
    return [r for r in _folders(results_dir, tree) if r.kind == DAMAGED]


def _folders(results_dir: Path, tree: Tree | None, nested: bool = False) -> list[Run]:
    tree = tree or Tree(results_dir)
    found = []
    for child in subfolders(tree):
        run = run_at(child, tree)
        if run is not None:
            found.append(run)
        elif nested:
            found += _below(child, tree)
        else:
            found += [r for r in (run_at(p, tree) for p in sorted(child.iterdir())) if r]
    return found


def _below(folder: Path, tree: Tree) -> list[Run]:
    """The run folders at any depth under `folder`, which holds no run, not looking inside one."""
    found = []
    for child in sorted(p for p in folder.iterdir() if p.is_dir() and tree.has(p)):
        run = run_at(child, tree)
        found += [run] if run is not None else _below(child, tree)
    return found


def saves(folder: Path, tree: Tree) -> list[tuple[Path, dict]]:
    """pytest-benchmark saves under `folder` (one machine folder deep): (path, its JSON)."""
    out = []
    for path in sorted(folder.glob("*/*.json")) + sorted(folder.glob("*.json")):
        if not tree.has(path):
            continue
        try:
            data = json.loads(path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        if isinstance(data, dict) and {"benchmarks", "machine_info"} <= data.keys():
            out.append((path, data))
    return out
