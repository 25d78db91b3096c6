"""What a command line says beyond its values: the command it names (`with_command`) and the
command env.json records (`command_line`, given the program's parser by `bench.cli.main`)."""

from __future__ import annotations

import argparse
import shlex

from bench.cli.options import path
from bench.store import paths


def with_command(argv: list[str]) -> list[str]:
    """`argv` with its command: `run` when none is given (no argument, or options first), as
    `./run_bench.sh` does. `--help` and `--version` alone stay the program's own."""
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")):
        return ["run", *argv]
    return list(argv)


def command_line(argv: list[str], parser: argparse.ArgumentParser) -> str:
    """The command as env.json records it, so that it re-runs as written from the project root
    on the reader's machine: the command named (`run` when it was left out), and every path
    option's value as `paths.recorded` gives it: relative to the project root where it lies
    inside the project, the placeholder `RESULTS_DIR` for a results directory elsewhere (a path
    of the machine that ran it means nothing in a committed folder). Options may be abbreviated
    (`--results`) or joined to their value (`--results-dir=x`), as argparse allows. `parser`:
    the program's, whose command `argv` names (`bench.cli.main.build_parser`)."""
    argv = with_command(argv)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    command = sub.choices.get(argv[0]) if argv else None
    actions = [a for a in (command._actions if command else []) if a.type is path]
    names = tuple(name for a in actions for name in a.option_strings)

    def value(option: str, text: str) -> str:
        # A path option not known to hold a results directory or a folder in one is a folder.
        return paths.recorded(path(text), results_dir=paths.PATH_OPTIONS.get(option, False))

    out: list[str] = []
    option = None  # the path option whose value is the next token
    for token in argv:
        if option is not None:
            out.append(value(option, token))
            option = None
            continue
        name, eq, given = token.partition("=")
        if eq and paths.path_option(name, names):
            out.append(f"{name}={value(paths.path_option(name, names), given)}")
        else:
            out.append(token)
            option = paths.path_option(token, names)
    return shlex.join(["python", "-m", "bench", *out])
