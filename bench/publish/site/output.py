"""The site's folder: checked before any work, built beside it and swapped in whole. Only a folder
carrying the marker an earlier `publish` wrote, or an empty one, is ever replaced."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from bench.faults import UsageError

MARKER = ".ampbench-site"
MARKER_TEXT = (
    "A static site made by `ampbench publish` from a results folder. The next publish into this\n"
    "folder replaces it whole: keep nothing of your own here.\n"
)


def check(output: Path, results_dir: Path) -> Path:
    """`output`, resolved, once it is a folder publishing may replace; one line otherwise."""
    out, res = output.resolve(), results_dir.resolve()
    if out.exists() and not out.is_dir():
        raise UsageError(f"--output {output} is a file, not a folder")
    if out == res or res in out.parents or out in res.parents:
        raise UsageError(f"--output {output} overlaps the results folder {results_dir}")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).is_file():
        raise UsageError(
            f"--output {output} is a folder that `ampbench publish` did not make (no {MARKER} "
            "in it); name a new or empty folder"
        )
    parent = out.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot make {parent} ({exc.strerror})") from exc
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"cannot write in {parent}, where the site is built")
    return out


def staging(out: Path) -> Path:
    """A new folder beside `out` to build the site in, with its marker."""
    folder = Path(tempfile.mkdtemp(prefix=f".{out.name}.new-", dir=out.parent))
    folder.chmod(0o755)  # a site is read by whoever serves it
    (folder / MARKER).write_text(MARKER_TEXT)
    return folder


def replace(new: Path, out: Path) -> None:
    """Put the site built in `new` at `out`, removing the site (or empty folder) there before."""
    if not out.is_dir():
        new.rename(out)
        return
    if any(out.iterdir()) and not (out / MARKER).is_file():  # it changed since `check`
        shutil.rmtree(new)
        raise UsageError(f"--output {out} is no longer a site `ampbench publish` made")
    old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
    out.rename(old / "site")
    new.rename(out)
    shutil.rmtree(old)
