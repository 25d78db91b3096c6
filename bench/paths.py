"""Where the project lives, and how a committed file names a path.

A results folder travels: it is made on a lent GPU box and committed here. A path of that box
inside the project (`/home/someone/ampbench/results`) means nothing elsewhere, so what a folder
records (the command in env.json, the report) names such a path relative to the project root, and
a path outside the project (`/tmp/s/results`) by its own name (`results`). Needs no torch.
"""

from __future__ import annotations

import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
"""The project's root: the folder that holds `bench/`."""
RESULTS = ROOT / "results"
"""The project's own results folder: the one its index (results/README.md) describes."""


def shown(path: Path | str, root: Path = ROOT) -> str:
    """`path` as a committed file should show it: relative to `root` when inside it (`results`,
    `results/lr-sweep`), otherwise by its own name. A relative `path` is taken as relative to the
    current directory."""
    resolved = Path(path).expanduser().resolve()
    try:
        return str(resolved.relative_to(root.resolve()))
    except ValueError:
        return resolved.name or str(resolved)


def shown_argv(argv: list[str], root: Path = ROOT) -> list[str]:
    """A command line as a committed file should show it: every absolute path in it, alone or as
    the value of `--option=PATH`, made `shown`."""
    out = []
    for token in argv:
        key, sep, value = token.partition("=")
        if token.startswith("/"):
            out.append(shown(token, root))
        elif sep and key.startswith("-") and value.startswith("/"):
            out.append(f"{key}={shown(value, root)}")
        else:
            out.append(token)
    return out


def shown_command(command: str, root: Path = ROOT) -> str:
    """`shown_argv` of a command recorded as one string (what reports print)."""
    try:
        return shlex.join(shown_argv(shlex.split(command), root))
    except ValueError:  # not a shell-quoted line: print it as it is
        return command


def in_results(path: Path | str, results: Path | None = None) -> bool:
    """True when `path` is `results` (default: the project's results folder) or lies inside it."""
    resolved, parent = Path(path).resolve(), (results or RESULTS).resolve()
    return resolved == parent or parent in resolved.parents
