"""What a command line says beyond its values: the command it names (`with_command`), the
command env.json records (`command_line`), the options given that a resume refuses
(`refuse_with_resume`), and where new folders go (`results_dir`).

What needs the program's parser is given it: `bench.cli.main` builds the parser from the command
modules, which import this one, so this one never imports main; main hands its parser to the
command on the parsed arguments (`args.parser`)."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from bench.cli.options import path
from bench.faults import UsageError
from bench.store import paths


def with_command(argv: list[str]) -> list[str]:
    """`argv` with its command: `run` when none is given (no argument, or options first), as
    `./run_bench.sh` does. `--help` and `--version` alone stay the program's own."""
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")):
        return ["run", *argv]
    return list(argv)


def results_dir(args: argparse.Namespace) -> Path:
    """Where a command's folders are: `--results-dir` when given, else the default of its kind
    of command: the project's git-ignored runs/ for a command that makes a new folder (run,
    numerics, maxbatch), the published results/ for one that reads or writes the published runs
    (index, promote, history, publish; `PUBLISHES` below)."""
    if args.results_dir is not None:
        return args.results_dir
    return paths.RESULTS if args.command in PUBLISHES else paths.default_results()


PUBLISHES = ("index", "promote", "history", "publish")
"""The commands whose --results-dir is the published results/ by default."""


def _subparser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser | None:
    """`command`'s own parser of the program's `parser` (None for no such command)."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices.get(command)


def refuse_with_resume(args: argparse.Namespace, allowed: tuple[str, ...]) -> None:
    """A resume takes its settings from the folder: refuse any option of the command, but
    `allowed`, that was given a value other than its default (one line naming the first). `args`
    as `bench.cli.main` parsed them, its parser on them (`args.parser`)."""
    parser = _subparser(args.parser, args.command)
    defaults = {a.dest: a.default for a in parser._actions} if parser else {}
    for action in parser._actions if parser else []:
        key = action.dest
        if key in (*allowed, "help") or not action.option_strings:
            continue
        if getattr(args, key, None) != defaults.get(key):
            raise UsageError(
                "--resume takes its settings from the folder's env.json; drop "
                + action.option_strings[0]
            )


def command_line(argv: list[str], parser: argparse.ArgumentParser) -> str:
    """The command as env.json records it, so that it re-runs as written from the project root
    on the reader's machine: the command named (`run` when it was left out), and every path
    option's value as `paths.recorded` gives it: relative to the project root where it lies
    inside the project, the placeholder `RESULTS_DIR` for a results directory elsewhere (a path
    of the machine that ran it means nothing in a committed folder). Options may be abbreviated
    (`--results`) or joined to their value (`--results-dir=x`), as argparse allows. `parser`:
    the program's, whose command `argv` names (`bench.cli.main.build_parser`)."""
    argv = with_command(argv)
    command = _subparser(parser, argv[0]) if argv else None
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
