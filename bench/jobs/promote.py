"""Promoting runs: `ampbench promote RUN [RUN...]` copies (or `--move`s) run folders into the
project's results/, gzip-compressing their rows, samples and results.csv (the command then
regenerates the index: `bench.commands.promote`). Every folder is checked before any is copied; a
refusal is one line naming the folder."""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

from bench.faults import UsageError
from bench.store import folders, paths, results


def _checked(run_dir: Path, results_dir: Path, *, allow_cpu: bool) -> Path:
    """Where `run_dir` goes in `results_dir`; raises UsageError unless it may go there."""
    if not run_dir.is_dir():
        raise UsageError(f"{run_dir}: no such folder")
    if not (run_dir / results.ENV).is_file():
        raise UsageError(f"{run_dir} is not a run folder (no {results.ENV})")
    env = results.read_env(run_dir)  # a damaged env.json is named here, in one line
    if env.get("device") == "cpu" and not allow_cpu:
        raise UsageError(
            f"{run_dir} is a CPU smoke run, not a result to publish (--allow-cpu copies it "
            "anyway; the index still leaves it out)"
        )
    target = results_dir / run_dir.name
    if run_dir.resolve() == target.resolve():
        raise UsageError(f"{run_dir} is already in {results_dir}")
    if target.exists():
        raise UsageError(f"{target} already exists; a published folder is never overwritten")
    return target


def promote(
    run_dirs: list[Path],
    *,
    results_dir: Path = paths.RESULTS,
    move: bool = False,
    allow_cpu: bool = False,
) -> list[Path]:
    """Copy (`move`: move) each run folder into `results_dir`; returns the new folders.
    Nothing is copied unless every folder passes its checks."""
    targets = [_checked(r, results_dir, allow_cpu=allow_cpu) for r in run_dirs]
    names = [t.name for t in targets]
    twice = next((n for n in names if names.count(n) > 1), None)
    if twice is not None:
        raise UsageError(f"two folders named {twice}; results/ holds one")
    folders.check_parent(results_dir)
    with contextlib.ExitStack() as held:
        # Every folder locked before any is copied: one that a process is still writing refuses,
        # in one line, and nothing is copied.
        for run_dir in run_dirs:
            try:
                held.enter_context(folders.locked(run_dir))
            except OSError as exc:  # a folder this user cannot write, so cannot lock
                raise UsageError(f"cannot lock {run_dir} ({exc.strerror or exc})") from exc
        results_dir.mkdir(parents=True, exist_ok=True)
        for run_dir, target in zip(run_dirs, targets, strict=True):
            _copy(run_dir, target)
    if move:
        for run_dir in run_dirs:
            shutil.rmtree(run_dir)
    return targets


def _copy(run_dir: Path, target: Path) -> None:
    """Copy `run_dir` to `target`, its lock file left out and its rows, samples and CSV packed. The
    copy is made under a hidden name and renamed, so no index sees half a folder."""
    partial = target.parent / f".{target.name}.partial"
    try:
        shutil.rmtree(partial, ignore_errors=True)  # left by a copy that was killed
        shutil.copytree(run_dir, partial, ignore=shutil.ignore_patterns(folders.LOCK))
        for name in (results.ROWS, results.SAMPLES, results.CSV):
            if (partial / name).is_file():
                results.pack(partial / name)
        partial.rename(target)
    except OSError as exc:
        shutil.rmtree(partial, ignore_errors=True)
        raise UsageError(f"cannot copy {run_dir} to {target} ({exc})") from exc
