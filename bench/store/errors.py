"""A fault's full traceback, kept in its job's folder as `errors/<name>.txt` (`keep`); the row
names that file in its `traceback` column, and a report says where they are (`where`)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from pathlib import Path

from bench.faults import TRACEBACK_TEXT

ERRORS_DIR = "errors"
COLUMN = "traceback"
"""A row's column naming its traceback's file, relative to the folder (`errors/<name>.txt`)."""
_UNSAFE = re.compile(r"[^A-Za-z0-9._=+-]+")
"""What a file name leaves out of a case id (its `/`, a user's `package.module:factory`)."""


LONGEST = 150
"""Characters of a file name before `.txt`: a longer name keeps its start and a hash of the whole
(file systems refuse names over 255 bytes)."""


def file_name(name: str) -> str:
    """`name` (a case id, a job's key) as a file name: `fp32/foreach/b8/cpu/s0` ->
    `fp32_foreach_b8_cpu_s0.txt`."""
    safe = _UNSAFE.sub("_", name).strip("_.") or "case"
    if len(safe) > LONGEST:
        safe = f"{safe[: LONGEST - 9]}-{hashlib.sha1(name.encode()).hexdigest()[:8]}"
    return safe + ".txt"


def save(run_dir: Path, name: str, text: str) -> str:
    """Write `text` as the traceback of `name` in `run_dir` (replacing an earlier one of the same
    name: a resumed case that failed again); returns its path relative to the folder."""
    folder = Path(run_dir) / ERRORS_DIR
    folder.mkdir(exist_ok=True)
    relative = f"{ERRORS_DIR}/{file_name(name)}"
    (Path(run_dir) / relative).write_text(text)
    return relative


def keep(run_dir: Path, row: dict, name: str) -> dict:
    """`row` as its folder keeps it: its traceback's text saved under `name`, and the file's path
    in its `traceback` column. A row without one (it passed, or failed with no exception) is
    returned as it is."""
    text = row.get(TRACEBACK_TEXT)
    if text is None:
        return row
    out = {k: v for k, v in row.items() if k != TRACEBACK_TEXT}
    out[COLUMN] = save(run_dir, name, text)
    return out


def of_ranks(texts: Iterable[tuple[int, object]]) -> str | None:
    """One traceback text of a case that failed on several ranks: each rank's (rank, text; None
    where it has none) under a `rank N:` line; None when no rank has one."""
    kept = [f"rank {rank}:\n{text}" for rank, text in texts if isinstance(text, str) and text]
    return "\n".join(kept) or None


def where(paths: Iterable[object]) -> list[str]:
    """The report's line on where the tracebacks are, when any of `paths` (the rows' `traceback`
    cells, empty or NaN where none) names one; else no line."""
    named = [p for p in paths if isinstance(p, str) and p]
    if not named:
        return []
    return [
        f"The full traceback of each failure is in `{ERRORS_DIR}/` in this folder, one file each "
        f"(`{named[0]}`, ...); a failed row's `{COLUMN}` column names its file.",
        "",
    ]
