"""How a command ended, told to the process that started it: where AMPBENCH_RESULT_JSON names a
file, one JSON object of folder, status, exit and error (`write`; `note_folder` as soon as a job
opens its folder; `read`). docs/options.md ("When something fails") gives each status.
Stdlib only."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from bench.faults import error_summary

RESULT_VAR = "AMPBENCH_RESULT_JSON"
"""Environment variable: the file a command writes how it ended to."""

STATUSES = {0: "ok", 1: "failed", 2: "usage", 130: "interrupted", 143: "interrupted"}
"""The status an exit status says where nothing else does (a command's own return, a
`SystemExit`, a revision older than this file: `bench.jobs.ab`); any other is `error`."""


@dataclass(frozen=True)
class Outcome:
    """What the file holds; every field None (or empty) that it does not."""

    folder: str | None = None
    """The folder the command's job opened (absolute), or None."""
    status: str | None = None
    """How it ended (docs/options.md); None: it ended before it could say."""
    exit: int | None = None
    """Its exit status."""
    error: str = ""
    """One line: what went wrong."""


def status_of(code: int) -> str:
    """The status exit status `code` says (`STATUSES`)."""
    return STATUSES.get(code, "error")


def _file() -> Path | None:
    given = os.environ.get(RESULT_VAR)
    return Path(given) if given else None


def _write(path: Path, record: dict) -> None:
    # Replaced whole: a reader never sees half a file.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(record))
        tmp.replace(path)
    except OSError as exc:  # the parent learns nothing; the command itself goes on
        print(f"ampbench: cannot write {RESULT_VAR} {path}: {exc}", file=sys.stderr, flush=True)


def note_folder(folder: Path) -> None:
    """The folder this process's job writes, noted as soon as it is opened."""
    path = _file()
    if path is not None:
        _write(path, {"folder": str(Path(folder).resolve())})


def write(exit: int, status: str, error: str = "") -> None:
    """How the command ended, with the folder noted before (if any)."""
    path = _file()
    if path is None:
        return
    line = (error.strip().splitlines() or [""])[0]
    _write(path, asdict(Outcome(folder=read(path).folder, status=status, exit=exit, error=line)))


def ended_by(exc: BaseException) -> tuple[int, str, str]:
    """(exit status, status, error) of a command ended by `exc`, an exception the command line
    lets through: a `SystemExit` (`--help`, a launcher stopped by SIGTERM) by its exit status,
    anything else as Python ends on it (exit status 1) and its one line."""
    if isinstance(exc, SystemExit) and (exc.code is None or isinstance(exc.code, int)):
        return exc.code or 0, status_of(exc.code or 0), ""
    if isinstance(exc, SystemExit):  # `sys.exit("message")`: Python prints it, exit status 1
        return 1, "error", str(exc.code)
    return 1, "error", error_summary(exc)


def read(path: Path) -> Outcome:
    """The file at `path`; an empty `Outcome` when there is none (or it is not one)."""
    try:
        record = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return Outcome()
    if not isinstance(record, dict):
        return Outcome()
    known = {k: record[k] for k in ("folder", "status", "exit") if k in record}
    return Outcome(**known, error=str(record.get("error") or ""))
