"""Results folders: naming and creating one, locking it while a process writes it, and checking
one about to be resumed (same commit, dirty flag, torch and GPU, unless `--force`: mixing rows
from two machines in one folder is the worst silent error a benchmark can make)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import sys
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

from bench.faults import UsageError
from bench.store import paths, results, schema
from bench.store.run_env import RunEnv

LOCK = ".lock"
COMPATIBLE = ("commit", "dirty", "torch", "gpu")
"""What must match between the machine that started a folder and the one that resumes it."""


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def iso(moment: datetime | None = None) -> str:
    """A UTC time as env.json records it: 2026-11-30T08:26:06+00:00."""
    return (moment or utc_now()).isoformat(timespec="seconds")


def stamp(moment: datetime) -> str:
    """A UTC time as a folder name starts: 20261130T082606Z."""
    return moment.astimezone(timezone.utc).strftime("%Y%m%dT%H%M%SZ")


TAG = re.compile(r"[A-Za-z0-9.-]+")
"""What a `--tag` may hold: it becomes part of a folder's name."""


def gpu_slug(gpu: str) -> str:
    """A GPU's name as folder and file names spell it: `NVIDIA H200` -> `NVIDIA-H200`."""
    return re.sub(r"[^A-Za-z0-9]+", "-", gpu).strip("-") or "unknown"


def run_dir_name(started: datetime, gpu: str, commit: str | None, suffix: str = "") -> str:
    sha = re.sub(r"[^0-9a-fA-F]", "", commit or "")[:7] or "nogit"
    return f"{stamp(started)}_{gpu_slug(gpu)}_{sha}{suffix}"


def tagged(suffix: str, tag: str | None) -> str:
    """A folder name's `suffix` (`_maxbatch`, or empty for a timing run) with the user's `--tag`
    after it: `_maxbatch_h200-pcie`, `_lr-sweep`."""
    if tag is None:
        return suffix
    if not TAG.fullmatch(tag):
        raise UsageError(f"tag {tag!r}: use letters, digits, '.' and '-' only")
    return f"{suffix}_{tag}"


def check_parent(parent: Path) -> None:
    """Refuse, before any work, a results directory that cannot hold new folders."""
    if parent.exists() and not parent.is_dir():
        raise UsageError(f"--results-dir {parent} is not a directory")
    probe = parent if parent.exists() else next((p for p in parent.parents if p.exists()), None)
    if probe is None or not os.access(probe, os.W_OK | os.X_OK):
        raise UsageError(f"--results-dir {parent} is not writable")


def create(parent: Path, name: str) -> Path:
    """A fresh folder under `parent`; an existing one is never reused or overwritten."""
    check_parent(parent)
    try:
        parent.mkdir(parents=True, exist_ok=True)
        for n in range(1, 1000):
            path = parent / (name if n == 1 else f"{name}-{n}")
            try:
                path.mkdir()
            except FileExistsError:
                continue
            return path
    except OSError as exc:
        raise UsageError(f"--results-dir {parent}: cannot create a folder there ({exc})") from exc
    raise UsageError(f"no free folder name under {parent} for {name}")


@contextlib.contextmanager
def locked(run_dir: Path) -> Iterator[None]:
    """Hold the folder's lock while writing it; a second process gets a one-line refusal.

    An advisory `flock` on `.lock`: the kernel releases it when the process dies, however it dies,
    so a killed run never leaves a folder locked."""
    try:
        handle = (run_dir / LOCK).open("a+")
    except OSError as exc:  # a read-only folder or file system, no permission
        raise UsageError(f"{run_dir} is not writable: cannot open {LOCK} ({exc.strerror})") from exc
    with handle as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            f.seek(0)
            holder = f.read().strip() or "another process"
            raise UsageError(f"{run_dir} is being written by {holder}; wait for it to end") from exc
        f.seek(0)
        f.truncate()
        f.write(f"pid {os.getpid()}\n")
        f.flush()
        try:
            yield
        finally:
            f.seek(0)
            f.truncate()


def require_dir(run_dir: Path) -> None:
    """A folder to resume must exist and hold env.json: checked before it is locked, so that a
    wrong path gets no lock file."""
    if not run_dir.is_dir():
        raise UsageError(f"--resume {run_dir}: no such folder")
    if not (run_dir / results.ENV).is_file():
        raise UsageError(f"--resume {run_dir}: no {results.ENV} there, so not a results folder")
    if not os.access(run_dir, os.W_OK | os.X_OK):  # before any work: resuming writes rows there
        raise UsageError(f"--resume {run_dir}: the folder is not writable")


def reopen(
    run_dir: Path, *, kind: str, here: dict, force: bool, allow: tuple[str, ...] = ()
) -> RunEnv:
    """The env.json of a folder to resume, with this resumption recorded in it (not yet written).

    `kind` is the folder's job (a key of `bench.store.schema.KINDS`); `here` is
    `bench.measure.env.collect()` of this machine. Call it holding the folder's lock. Bad input
    ends here, before anything in the folder changes. `allow`: keys of `COMPATIBLE` that may
    differ without `force` (recorded as `differs`)."""
    require_dir(run_dir)
    info = results.read_env(run_dir)
    found = schema.kind_of(info, run_dir)
    if found != kind:
        what = (
            f"that folder is {schema.describe(found)}"
            if found
            else f"that folder is not {schema.describe(kind)}"
        )
        raise UsageError(f"--resume {run_dir}: {what}; resume it with its own command")
    if info.get("device") == "cuda" and here.get("device") != "cuda":
        raise UsageError(f"--resume {run_dir} is a CUDA run, but no GPU is available here")
    differs = [
        f"{key} {info.get(key)!r} there, {here.get(key)!r} here"
        for key in COMPATIBLE
        if info.get(key) != here.get(key) and key in allow
    ]
    mismatches = [
        f"{key} {info.get(key)!r} there, {here.get(key)!r} here"
        for key in COMPATIBLE
        if info.get(key) != here.get(key) and key not in allow
    ]
    if mismatches and not force:
        raise UsageError(
            f"--resume {run_dir}: made elsewhere ({'; '.join(mismatches)}); "
            "give --force to mix them anyway"
        )
    entry: dict[str, object] = {"at": iso(), "argv": paths.shown_argv(sys.argv)}
    if mismatches:
        entry["forced"] = mismatches
    if differs:
        entry["differs"] = differs
    info.setdefault("resumed", []).append(entry)
    return info
