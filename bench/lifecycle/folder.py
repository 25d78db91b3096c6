"""A results folder's life, for every job: open a new one or reopen one to resume, hold its lock
while the job writes, record the machine and the job's settings, and mark the end."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import torch

from bench import outcome
from bench.faults import UsageError
from bench.measure import env
from bench.store import folders, results, schema
from bench.store.run_env import RunEnv


def log(message: str) -> None:
    print(f"ampbench: {message}", file=sys.stderr, flush=True)


@dataclass
class Folder:
    """A folder a job holds the lock of, with its env.json as the job keeps it (`info`)."""

    path: Path
    info: RunEnv
    kind: str
    here: dict = field(default_factory=dict)
    """This machine (`bench.measure.env.collect`), as the folder was opened or resumed on it."""

    @property
    def settings(self) -> dict:
        """The job's settings as env.json records them."""
        return self.info[schema.settings_key(self.kind)]

    def save(self) -> None:
        """Write env.json as it stands (each write replaces the file whole)."""
        results.write_env(self.path, self.info)

    def finish(self) -> None:
        """Mark the job's end in env.json."""
        self.info["ended"] = folders.iso()
        self.save()


@contextlib.contextmanager
def new_folder(
    results_dir: Path,
    *,
    kind: str,
    device: str,
    settings: dict,
    command: str,
    suffix: str = "",
    tag: str | None = None,
    label: str | None = None,
) -> Iterator[Folder]:
    """A new folder under `results_dir` for a job of `kind` (`bench.store.schema.KINDS`), with
    env.json written (machine, start time, command, settings, schema version), locked while the
    caller writes. Named by the start time, the GPU, `label` or this checkout's short commit, and
    `suffix` with the user's `tag` (`bench.store.folders.tagged`); noted for the process that
    started this one (`bench.outcome`)."""
    suffix = folders.tagged(suffix, tag)  # a bad --tag is bad input, before anything else
    folders.check_parent(results_dir)  # before anything is measured or collected
    info = RunEnv(schema.stamp(env.collect(device), kind))
    now = folders.utc_now()
    info.update(started=folders.iso(now), command=command, **{schema.settings_key(kind): settings})
    name = folders.run_dir_name(now, str(info["gpu"]), info["commit"], suffix)
    if label is not None:
        name = f"{folders.stamp(now)}_{folders.gpu_slug(str(info['gpu']))}_{label}{suffix}"
    path = folders.create(results_dir, name)
    info["run_name"] = path.name
    folder = Folder(path=path, info=info, kind=kind, here=dict(info))
    folder.save()
    outcome.note_folder(path)
    with folders.locked(path):
        yield folder


@contextlib.contextmanager
def resumed_folder(
    run_dir: Path,
    *,
    kind: str,
    force: bool,
    allow: tuple[str, ...] = (),
    refuse_finished: bool = False,
) -> Iterator[Folder]:
    """An existing folder of a job of `kind`, locked, after the checks that must pass before
    anything in it changes (`bench.store.folders.reopen`; `force`, `allow`, `refuse_finished`). The
    resumption is recorded in `info`, written by the caller's first `save`."""
    folders.require_dir(run_dir)
    with folders.locked(run_dir):  # before env.json is read: no other writer changes it between
        recorded = results.read_env(run_dir)
        device = recorded.get("device", "cpu")
        # Described as the folder's device where it can be: a CUDA folder on a machine without a
        # GPU is then refused by `reopen`, by name.
        here = env.collect(device if device != "cuda" or torch.cuda.is_available() else "cpu")
        info = folders.reopen(run_dir, kind=kind, here=here, force=force, allow=allow)
        if refuse_finished and "ended" in info:
            raise UsageError(f"--resume {run_dir}: it is complete; `report` re-renders it")
        outcome.note_folder(run_dir)
        yield Folder(path=run_dir, info=info, kind=kind, here=here)
