"""What a run ran on: hardware, software and the project's own version, for env.json."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
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


def git_commit() -> tuple[str | None, bool | None]:
    """(full commit sha, dirty flag) of the project, or (None, None) when unknown."""
    # The driver's AMPBENCH_GIT_COMMIT wins over git: on the lent boxes the copy's .git was seen
    # with a HEAD that did not resolve and with a stale one.
    given = os.environ.get("AMPBENCH_GIT_COMMIT") or None
    if given is not None:
        dirty = os.environ.get("AMPBENCH_GIT_DIRTY")
        return given, (dirty == "1") if dirty is not None else None
    # safe.directory: a checkout copied to another machine may belong to another user, and git
    # refuses to read such a repository unless told to trust it.
    git = ["git", "-c", "safe.directory=*"]
    sha = _run([*git, "rev-parse", "--verify", "HEAD"])
    if sha is None:
        return None, None
    # Dirty means the code: results written or published since the commit change no figure.
    status = [*git, "status", "--porcelain", "--untracked-files=no", "--", ".", ":!results"]
    return sha, bool(_run(status))


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
    sha, dirty = git_commit()
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
        "commit": sha,
        "dirty": dirty,
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
