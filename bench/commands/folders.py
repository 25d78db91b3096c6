"""Checks of the folders and files a command reads or writes, each failing in one line."""

from __future__ import annotations

import os
from pathlib import Path

from bench.faults import UsageError
from bench.store import results


def run_folder(path: Path, *, rows: bool = True) -> Path:
    """A timing run's folder, checked: one line names what is wrong with it. `rows`: it must
    hold at least one whole row (`report` and `headline` alike: neither has anything to show
    without one)."""
    if not results.stored(path / results.ROWS) or not (path / results.ENV).is_file():
        raise UsageError(f"{path} is not a run folder (no {results.ROWS} and {results.ENV})")
    results.read_env(path)  # a corrupt env.json is named here, in one line
    if rows and not results.read_jsonl(path / results.ROWS):  # a partial last line is no row
        raise UsageError(f"{path} has no rows yet ({results.ROWS} holds no whole row)")
    return path


def write(path: Path, text: str) -> None:
    try:
        path.write_text(text)
    except OSError as exc:
        raise UsageError(f"cannot write {path} ({exc.strerror})") from exc


def writable(folder: Path) -> Path:
    """A folder a command is about to write in, checked before it writes anything there."""
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"{folder} is not writable")
    return folder


def directory(folder: Path) -> Path:
    if not folder.is_dir():
        raise UsageError(f"--results-dir {folder} is not a directory")
    return folder


def os_error(exc: OSError) -> UsageError:
    """A file a command could not read or write, in one line that names it."""
    return UsageError(f"{exc.filename or exc}: {exc.strerror or 'not usable'}")
