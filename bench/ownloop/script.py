"""One run of a user's training script: its environment (the mode, the seed, its folder, this
checkout first on PYTHONPATH), its output into a log, and its exit status (`bench.ownloop.job`)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from bench.ownloop import contract
from bench.store import paths

TAIL_LINES = 12
"""How many of a failed script's last lines its row keeps."""


def tail(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return "\n".join(lines[-TAIL_LINES:])


Runner = Callable[[list[str], dict[str, str], Path, float], tuple[int | None, str]]
"""(command, environment, log file, timeout) -> (exit status, None on a timeout; its output)."""


def run_script(
    command: list[str], environ: dict[str, str], log_path: Path, timeout_s: float
) -> tuple[int | None, str]:
    """Run the script once, its output (stdout and stderr) into `log_path`."""
    with log_path.open("w") as f:
        try:
            # In the directory the user ran the command in (run_bench.sh changes into the
            # project): `-- python train.py` names their train.py.
            proc = subprocess.run(
                command, env=environ, stdout=f, stderr=subprocess.STDOUT, timeout=timeout_s,
                check=False, cwd=environ.get(paths.CWD_VAR) or None,
            )  # fmt: skip
            code: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            code = None
        except OSError as exc:  # the command itself cannot start (no such program)
            f.write(f"{command[0]}: {exc.strerror}\n")
            code = 127
    return code, log_path.read_text(errors="replace")


def child_environ(mode: str, seed: int, out: Path) -> dict[str, str]:
    """The environment of one run: the caller's, the mode, the seed and the run's folder, and
    this checkout's root first on PYTHONPATH (before any the user has)."""
    environ = {
        **os.environ,
        contract.MODE: mode,
        contract.OLD_MODE: mode,  # for a script that reads the old name
        contract.SEED: str(seed),
        contract.OUT: str(out),
    }
    # The script runs in the user's own folder, where `from bench.ownloop.hf import
    # ProbeCallback` finds no `bench` unless ampbench is installed. The root goes first always,
    # not only where `bench` would not import otherwise: the run writes the folder this driver
    # reads back, so it must import this very copy of bench, not another installed elsewhere
    # (the script's own folder still comes first in its sys.path). A bench installed without
    # its checkout (no pyproject.toml beside it) is on its interpreter's path already.
    if (paths.ROOT / "pyproject.toml").is_file():
        theirs = os.environ.get("PYTHONPATH")
        environ["PYTHONPATH"] = os.pathsep.join([str(paths.ROOT), *([theirs] if theirs else [])])
    return environ
