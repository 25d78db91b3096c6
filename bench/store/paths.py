"""Where the project lives, where a command's paths point, and how a committed file names a path.

One rule for every entry point (`ampbench`, `python -m bench`, `./run_bench.sh`): a relative path
on the command line is taken from the directory the user ran the command in (`run_bench.sh`
changes into the project and passes that directory in AMPBENCH_CWD), and new run folders go to
the project's own `runs/` (git-ignored; `promote` publishes one into `results/`), wherever the
command is run from.

A results folder travels: it is made on a lent GPU box and committed here. The command a folder
records (env.json's `command`, a report's "Produced by") must re-run as written, from the project
root: a path inside the project is recorded relative to the project root (the box's
`/home/someone/ampbench/results` means nothing elsewhere; `results` does), and a path outside it
absolute (`/tmp/s/results`: its bare name would point somewhere else). The argv lists env.json
keeps beside the command (the interpreter, the script, what a resume was given) are notes, not
commands: there a path outside the project is shown by its own name. Needs no torch.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
"""The project's root: the folder that holds `bench/`."""
RESULTS = ROOT / "results"
"""The project's own results folder: the one its index (results/README.md) describes."""
RUNS = ROOT / "runs"
"""Where a run, study or search lands unless `--results-dir` says otherwise: git-ignored, so a
user's own runs never show in `git status` or in the published index. `ampbench promote RUN`
copies a run from here into RESULTS."""
SITE = ROOT / "site"
"""Where `ampbench publish` writes the static site unless `--output` says otherwise: git-ignored,
made again from results/ whenever it is wanted."""
CWD_VAR = "AMPBENCH_CWD"
"""Environment variable: the directory the user ran the command in (set by run_bench.sh)."""


def from_user(text: str) -> Path:
    """A path as the user typed it on the command line: relative to the directory the command
    was run in (AMPBENCH_CWD, else the current directory)."""
    path = Path(text).expanduser()
    return path if path.is_absolute() else Path(os.environ.get(CWD_VAR) or ".") / path


def default_results() -> Path:
    """Where new run folders go when no --results-dir is given: the project's git-ignored runs/
    (`RUNS`; `ampbench promote` publishes a run from there into results/), from whichever
    directory the command is run. A copy of bench installed without its project (no
    pyproject.toml beside it) has none, and uses runs/ of the user's directory."""
    return RUNS if (ROOT / "pyproject.toml").is_file() else from_user("runs")


def shown(path: Path | str, root: Path = ROOT) -> str:
    """`path` as a committed file should show it: relative to `root` when inside it (`results`,
    `results/lr-sweep`), otherwise by its own name. A relative `path` is taken as relative to the
    current directory."""
    resolved = Path(path).expanduser().resolve()
    try:
        return str(resolved.relative_to(root.resolve()))
    except ValueError:
        return resolved.name or str(resolved)


def recorded(path: Path | str, root: Path = ROOT) -> str:
    """`path` as a recorded command names it, so that the command re-runs as written from the
    project root: relative to `root` when inside it (`results/x`; `.` for the root itself),
    otherwise absolute. A relative `path` is taken as relative to the current directory."""
    resolved = Path(path).expanduser().resolve()
    try:
        return str(resolved.relative_to(root.resolve()))
    except ValueError:
        return str(resolved)


def _map_paths(argv: list[str], show: Callable[[str], str]) -> list[str]:
    """`argv` with every absolute path in it, alone or as the value of `--option=PATH`,
    replaced by `show(path)`."""
    out = []
    for token in argv:
        key, sep, value = token.partition("=")
        if token.startswith("/"):
            out.append(show(token))
        elif sep and key.startswith("-") and value.startswith("/"):
            out.append(f"{key}={show(value)}")
        else:
            out.append(token)
    return out


def shown_argv(argv: list[str], root: Path = ROOT) -> list[str]:
    """An argv list as env.json notes it (not a command to re-run): every absolute path made
    `shown`, so that no path of the machine that ran it is kept."""
    return _map_paths(argv, lambda p: shown(p, root))


def shown_command(command: str, root: Path = ROOT) -> str:
    """A recorded command as a report prints it: as recorded, so that it re-runs, except that an
    absolute path inside the project (as folders recorded before `recorded` existed may hold) is
    made relative to it."""
    try:
        argv = shlex.split(command)
    except ValueError:  # not a shell-quoted line: print it as it is
        return command
    return shlex.join(_map_paths(argv, lambda p: recorded(p, root) if in_results(p, root) else p))


def in_results(path: Path | str, results: Path | None = None) -> bool:
    """True when `path` is `results` (default: the project's results folder) or lies inside it."""
    resolved, parent = Path(path).resolve(), (results or RESULTS).resolve()
    return resolved == parent or parent in resolved.parents
