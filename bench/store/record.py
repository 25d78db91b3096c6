"""A record folder (`ampbench record`, docs/options.md): record.json, one entry per part (its
status, exit status, wall time, folder and log), and the status files a detached record writes
for a later `record --status` (status.json, and status.txt, its one line). Read and written
here; the job (`bench.jobs.record`) fills them, publishing reads them. Stdlib only."""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

RECORD_JSON = "record.json"
STATUS_JSON = "status.json"
STATUS_TXT = "status.txt"
LOGS = "logs"
SUFFIX = "_record"
"""A record folder's name: `<start>_<gpu>_<commit>_record`, as every folder is named."""
VERSION = 1

DONE, FAILED, SKIPPED, NOT_RUN, STOPPED, RUNNING = (
    "done", "failed", "skipped", "not run", "stopped", "running",
)  # fmt: skip
FINISHED = (DONE, FAILED, SKIPPED)
"""The statuses a later call leaves as they are; it runs (or resumes) the others: `not run`
(no time was left), `stopped` (stopped at the budget or by a signal) and `running` (the process
died with it: killed)."""


@dataclass
class Entry:
    """One part of a record, as record.json keeps it."""

    name: str
    what: str
    status: str = NOT_RUN
    why: str = ""
    """One line: why it was skipped, not run, stopped or failed; empty when it was done."""
    exit: int | None = None
    """The last attempt's exit status."""
    wall_s: float = 0.0
    """Every attempt's wall time, summed."""
    attempts: int = 0
    started: str | None = None
    ended: str | None = None
    folder: str | None = None
    """The part's output folder, relative to the record's."""
    log: str | None = None
    """Its log, relative to the record's folder; each attempt appends to it."""
    command: list[str] = field(default_factory=list)
    """The last attempt's command line."""


@dataclass
class Record:
    """record.json: the commit and machine a record is of, and its parts in order."""

    commit: str
    dirty: bool | None
    device: str
    gpu: str
    started: str
    parts: list[Entry]
    calls: list[dict] = field(default_factory=list)
    """One item per call of `record` on this folder: its start, budget and pid."""
    version: int = VERSION

    @property
    def complete(self) -> bool:
        """Whether every part is finished (`FINISHED`)."""
        return all(p.status in FINISHED for p in self.parts)

    def part(self, name: str) -> Entry:
        return next(p for p in self.parts if p.name == name)


def _replace(path: Path, text: str) -> None:
    # Replaced whole: a reader (`record --status`, another call) never sees half a file.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    tmp.replace(path)


def write(folder: Path, record: Record) -> None:
    _replace(folder / RECORD_JSON, json.dumps(dataclasses.asdict(record), indent=1) + "\n")


def read(folder: Path) -> Record:
    """The record in `folder`; a key it does not know is an error (TypeError), not ignored."""
    data = json.loads((folder / RECORD_JSON).read_text())
    parts = [Entry(**p) for p in data.pop("parts")]
    return Record(**data, parts=parts)


def is_record(folder: Path) -> bool:
    return (folder / RECORD_JSON).is_file()


def newest(parents: list[Path], *, differing_from: str | None = None) -> Path | None:
    """The newest record folder directly under any of `parents` (by the start time its name
    begins with), or, `differing_from` given, the newest whose commit is another."""
    found = [p for parent in parents if parent.is_dir() for p in parent.iterdir() if is_record(p)]
    for folder in sorted(found, key=lambda p: p.name, reverse=True):
        if differing_from is None or read(folder).commit != differing_from:
            return folder
    return None


def write_status(folder: Path, status: dict) -> None:
    """status.json and status.txt, its line (`status_line`)."""
    _replace(folder / STATUS_JSON, json.dumps(status, indent=1) + "\n")
    _replace(folder / STATUS_TXT, status_line(status) + "\n")


def read_status(folder: Path) -> dict:
    return json.loads((folder / STATUS_JSON).read_text())


def status_line(status: dict, now: float | None = None, alive: bool | None = None) -> str:
    """One line: the record, its state, the part running and how far it is, and the time left.
    `now` (a time.time()) and `alive` (whether the call's process still runs) make it current
    for a reader; status.txt is the line as the record last wrote it."""
    head = f"record {Path(status['record']).name} at {status['commit'][:7]}"
    counts = ", ".join(f"{n} {s}" for s, n in status["counts"].items() if n)
    state = status["state"]
    if alive is False and state == "running":
        state = f"not running (process {status['pid']} ended without saying)"
    text = f"{head}: {state}"
    if status.get("part") and state == "running":
        elapsed = (now or status["updated"]) - status["part_started"]
        text += (
            f"; part {status['part_index']}/{status['parts_total']} {status['part']} "
            f"({elapsed:.0f} s in)"
        )
    text += f"; {counts}" if counts else ""
    if status.get("deadline") is not None and state == "running":
        left = status["deadline"] - (now or status["updated"])
        text += f"; {max(left, 0):.0f} s of the budget left"
    return text


def alive(pid: int) -> bool:
    """Whether process `pid` still runs (on this machine)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it runs, as another user
        return True
    return True


def last_line(log: Path) -> str:
    """The last non-empty line of a part's log: how far the part is."""
    try:
        with log.open("rb") as f:
            f.seek(max(f.seek(0, os.SEEK_END) - 4096, 0))
            lines = [ln for ln in f.read().decode(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1].strip() if lines else ""
