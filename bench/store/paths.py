"""Where the project lives, where a command's paths point (relative to where the user ran it;
new folders in `runs/`), and how a committed file names a path: relative to the project root,
or `RESULTS_DIR/...` outside it, so a recorded command re-runs as written. Needs no torch."""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Iterable
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


RESULTS_DIR = "RESULTS_DIR"
"""How a recorded command names a results directory outside the project: a placeholder for the
reader's own, where the machine that ran it had a folder of its own (`/tmp/s/results`)."""
PATH_OPTIONS = {"--results-dir": True, "--resume": False}
"""The path options of the commands that record their command line, and whether the option
names a results directory (True) or a folder in one (`--resume RUN_DIR`)."""


def recorded(path: Path | str, root: Path = ROOT, *, results_dir: bool = True) -> str:
    """`path` as a recorded command names it, so that the command re-runs as written from the
    project root: relative to `root` when inside it (`results/x`; `.` for the root itself),
    otherwise the placeholder `RESULTS_DIR` for a results directory (`results_dir`) or
    `RESULTS_DIR/<its name>` for a folder in one. A relative `path` is taken as relative to the
    current directory."""
    resolved = Path(path).expanduser().resolve()
    try:
        return str(resolved.relative_to(root.resolve()))
    except ValueError:
        return RESULTS_DIR if results_dir else f"{RESULTS_DIR}/{resolved.name}"


def path_option(token: str, names: Iterable[str] = PATH_OPTIONS) -> str | None:
    """The option of `names` that `token` names, whole or abbreviated as argparse allows
    (`--results` for `--results-dir`); None when it names none, or more than one."""
    if not token.startswith("--"):
        return None
    matches = [o for o in names if o == token or o.startswith(token)]
    return matches[0] if len(matches) == 1 else None


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
    """A recorded command as a report prints it: as recorded, so that it re-runs, except that a
    path recorded whole by an older version is shown as `recorded` gives it now: relative to the
    project where it lies inside it, and the value of a path option outside it (`--results-dir
    /tmp/s/results`) as the placeholder `RESULTS_DIR`."""
    try:
        argv = shlex.split(command)
    except ValueError:  # not a shell-quoted line: print it as it is
        return command
    return shlex.join(map_values(argv, lambda token, option: _shown_value(token, option, root)))


def map_values(
    argv: list[str], show: Callable[[str, str | None], str], names: Iterable[str] = PATH_OPTIONS
) -> list[str]:
    """`argv` with each token as `show(token, option)` gives it: `option` is the path option of
    `names` whose value the token is (`--results-dir X`, `--results-dir=X`), else None."""
    out: list[str] = []
    option = None  # the path option whose value is the next token
    for token in argv:
        if option is not None:
            out.append(show(token, option))
            option = None
            continue
        name, eq, value = token.partition("=")
        if eq and path_option(name, names):
            out.append(f"{name}={show(value, path_option(name, names))}")
        else:
            out.append(show(token, None))
            option = path_option(token, names)
    return out


def _shown_value(token: str, option: str | None, root: Path) -> str:
    """One token of an older recorded command: an absolute path inside the project made
    relative; the value of a path option outside it made the placeholder; the rest as is."""
    if not token.startswith("/"):
        return token
    if in_results(token, root):
        return recorded(token, root)
    return recorded(token, root, results_dir=PATH_OPTIONS[option]) if option else token


def in_results(path: Path | str, results: Path | None = None) -> bool:
    """True when `path` is `results` (default: the project's results folder) or lies inside it."""
    resolved, parent = Path(path).resolve(), (results or RESULTS).resolve()
    return resolved == parent or parent in resolved.parents
