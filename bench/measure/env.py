"""What a run ran on: hardware, software and the project's own version, for env.json."""

from __future__ import annotations

import contextlib
import hashlib
import os
import platform
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch

from bench.faults import UsageError
from bench.modes.mode import tf32_flags
from bench.store import paths

ROOT = paths.ROOT


def _run(cmd: list[str]) -> str | None:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=20, cwd=ROOT, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


OVERRIDE = "AMPBENCH_GIT_COMMIT"
"""Names the commit of a tree git cannot read: a copy without `.git` (the lent GPU boxes')."""
OVERRIDE_DIRTY = "AMPBENCH_GIT_DIRTY"
"""With `OVERRIDE`: `1` where the copy holds uncommitted changes, `0` where it does not."""
TRUST_OVERRIDE = "AMPBENCH_GIT_OVERRIDE"
"""`1`: honour `OVERRIDE` where git names a commit too (a copy whose `.git` is stale or another
tree's, a test). Without it git wins wherever it can name one: a variable left set in a shell
must not let other code pass for a study's commit."""


@dataclass(frozen=True)
class Code:
    """Which code runs: its commit, whether it holds uncommitted changes, and a hash of them."""

    commit: str | None
    """The full sha, or None where neither git nor `OVERRIDE` names one."""
    dirty: bool | None
    """Uncommitted changes to the code (results/ left out); None: not known."""
    diff_hash: str | None = None
    """Where dirty: sha256 (12 hex digits) of `git diff HEAD` and the untracked Python files'
    paths and contents (results/ left out), so that two dirty trees are the same code only where
    it matches; None where clean or not known."""
    source: str | None = None
    """`git`, or `OVERRIDE` where that variable named the commit; None where none is known."""


def code() -> Code:
    """The code this process runs (`Code`): git's answer, or `OVERRIDE`'s where git names no
    commit or `TRUST_OVERRIDE` is `1`."""
    given = os.environ.get(OVERRIDE) or None
    if given is not None and os.environ.get(TRUST_OVERRIDE) == "1":
        return _given(given)
    read = _from_git()
    if read.commit is None:
        return _given(given) if given is not None else read
    if given is not None and not read.commit.startswith(given):
        warnings.warn(
            f"{OVERRIDE}={given} ignored: git names {read.commit[:7]} here "
            f"({TRUST_OVERRIDE}=1 honours it in a copy whose .git is not its own)",
            RuntimeWarning,
            stacklevel=2,
        )
    return read


def git_commit() -> tuple[str | None, bool | None]:
    """(full commit sha, dirty flag) of the project (`code`), or (None, None) when unknown."""
    c = code()
    return c.commit, c.dirty


def _given(sha: str) -> Code:
    dirty = os.environ.get(OVERRIDE_DIRTY)
    return Code(sha, (dirty == "1") if dirty is not None else None, None, OVERRIDE)


# safe.directory: a checkout copied to another machine may belong to another user, and git
# refuses to read such a repository unless told to trust it.
_GIT = ("git", "-c", "safe.directory=*")
_CODE = ("--", ".", ":!results")
"""Dirty means the code: results written or published since the commit change no figure."""


def _from_git() -> Code:
    sha = _run([*_GIT, "rev-parse", "--verify", "HEAD"])
    if sha is None:
        return Code(None, None)
    dirty = bool(_run([*_GIT, "status", "--porcelain", "--untracked-files=no", *_CODE]))
    return Code(sha, dirty, _diff_hash() if dirty else None, "git")


def _diff_hash() -> str:
    """sha256 of the uncommitted changes: `git diff HEAD`, then each untracked Python file (not
    ignored) by path and content, since changed code may import a module git does not track.
    Python files only: a results folder outside results/ grows between a study's commands."""
    h = hashlib.sha256((_run([*_GIT, "diff", "HEAD", "--binary", *_CODE]) or "").encode())
    sources = ("--", "*.py", ":!results")
    listed = _run([*_GIT, "ls-files", "--others", "--exclude-standard", "-z", *sources]) or ""
    for name in sorted(filter(None, listed.split("\0"))):
        h.update(b"\0" + name.encode() + b"\0")
        with contextlib.suppress(OSError):  # a file gone since it was listed
            h.update((ROOT / name).read_bytes())
    return h.hexdigest()[:12]


def benchmark_save_name() -> str:
    """The name `./run_bench.sh pytest` saves a pytest-benchmark run under: the short commit,
    with `_uncommitted-changes` when the code differs from it (pytest-benchmark's own autosave
    convention), or `nogit` when the commit is unknown. Set explicitly, because autosave asks git
    itself and a copied working tree without history makes every save `unknown`."""
    sha, dirty = git_commit()
    if sha is None:
        return "nogit"
    return sha[:7] + ("_uncommitted-changes" if dirty else "")


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def gpu_name(device: str) -> str:
    return torch.cuda.get_device_name() if device == "cuda" else "cpu"


def collect(device: str) -> dict[str, object]:
    made = code()
    env: dict[str, object] = {
        "device": device,
        "gpu": gpu_name(device),
        "gpu_count": torch.cuda.device_count() if torch.cuda.is_available() else 0,
        "driver": None,
        # Only where a GPU runs: the CUDA version torch was built with says nothing of a CPU run.
        "cuda": torch.version.cuda if device == "cuda" else None,
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "cpu": _cpu_name(),
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "git": _run(["git", "--version"]),
        "commit": made.commit,
        "dirty": made.dirty,
        "diff_hash": made.diff_hash,
        "commit_source": made.source,
        "argv": paths.shown_argv(sys.argv),
        **tf32_flags(),
        "fp16_reduced_precision_reduction": (
            torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction
        ),
    }
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        env["gpu_memory_gib"] = props.total_memory / 2**30
        env["gpu_sm_count"] = props.multi_processor_count
        env["gpu_capability"] = f"{props.major}.{props.minor}"
        env["driver"] = _run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader", "-i", "0"]
        )
    return env


def device(requested: str) -> str:
    """`auto` -> cuda when a GPU is visible, else cpu; `cuda` without a GPU is bad input."""
    if requested == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda was asked for, but torch.cuda.is_available() is False")
    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return requested
