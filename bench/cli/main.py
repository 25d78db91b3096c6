"""`main(argv)`: parse, call the command's one function (`bench.cli.table` names its module), and
turn what went wrong into one line and an exit status; and what a command line says beyond its
values: the command it names (`with_command`), the command env.json records (`command_line`)."""

from __future__ import annotations

import argparse
import importlib
import shlex
import signal
import sys
from typing import NoReturn

from bench import outcome, quiet
from bench.cli.options import Parser, path
from bench.cli.table import ACTIONS, COMMANDS, RENAMED, build_parser
from bench.faults import Interrupted, UsageError, debug, how_stopped, stop_on_sigterm
from bench.store import paths


def main(argv: list[str] | None = None) -> int:
    """`ampbench ARGV`: the exit status (0; 1 when a run, study or check found a failure; 2 for bad
    input, a setting a config refused among them (`bench.commands.given.settings`); 130 when
    interrupted, 143 when stopped by SIGTERM, which ends a job as Ctrl-C does). Known warnings of
    other packages are left out unless AMPBENCH_DEBUG=1 (`bench.quiet`). How it ended is written
    to the file AMPBENCH_RESULT_JSON names, if any (`bench.outcome`)."""
    previous = stop_on_sigterm()
    try:
        code, status, error = _command(sys.argv[1:] if argv is None else argv)
    except BaseException as exc:  # a bug, or a SystemExit: it ends the process as it would have
        outcome.write(*outcome.ended_by(exc))
        raise
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    outcome.write(code, status, error)
    return code


def _command(argv: list[str]) -> tuple[int, str, str]:
    """Parse `argv` once and run its command: (exit status, status, error), as `bench.outcome`
    records them; what went wrong is also one line on stderr."""
    try:
        argv = with_command(argv)
        if argv[:1] and argv[0] in RENAMED:  # an old name: it runs the command, saying so once
            new = RENAMED[argv[0]]
            print(f"ampbench: `{argv[0]}` is now `{new}`; the old name will go", file=sys.stderr)
            argv = [new, *argv[1:]]
        if "--debug" not in argv:  # --debug shows the known warnings this leaves out
            quiet.quiet()
        parser = build_parser()
        args, rest = parser.parse_known_args(argv)
        if rest and not getattr(COMMANDS[args.command], "PASSES_ON", None):
            parser.error(f"unrecognized arguments: {' '.join(rest)}")  # as parse_args says it
        args.passed_on = rest  # the options a command gives on (`ab`: each round's `run`)
        args.argv = argv  # what a relaunch repeats
        args.parser = parser  # what a command reads its own options from (`bench.commands.given`)
        args.command_line = command_line(argv, parser)  # what env.json records of a new folder
        # The one deferred import of the command line, as pip dispatches: only the chosen action
        # is imported, so parsing and `--help` import no torch, pandas or matplotlib.
        action = importlib.import_module(ACTIONS[args.command])
        with debug(getattr(args, "debug", False)):  # `--debug` of the commands that run cases
            code = action.run(args)
        return code, outcome.status_of(code), ""
    except UsageError as exc:
        print(f"ampbench: error: {exc}", file=sys.stderr)
        return 2, "usage", str(exc)
    except Interrupted as exc:
        print(f"ampbench: {exc}", file=sys.stderr)
        return exc.status, "interrupted", str(exc)
    except KeyboardInterrupt as exc:
        how, status = how_stopped(exc)
        print(f"ampbench: {how}; every finished part is kept in its folder", file=sys.stderr)
        return status, "interrupted", how


def with_command(argv: list[str]) -> list[str]:
    """`argv` with its command: `run` when none is given (no argument, or options first), as
    `./run_bench.sh` does. `--help` and `--version` alone stay the program's own."""
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")):
        return ["run", *argv]
    return list(argv)


def command_line(argv: list[str] | None = None, parser: Parser | None = None) -> str:
    """The command env.json records for `argv` (this process's arguments when None), so that it
    re-runs as written from the project root on the reader's machine: the command named (`run`
    when it was left out), and every path option's value as `paths.recorded` gives it: relative
    to the project root where it lies inside the project, the placeholder `RESULTS_DIR` for a
    results directory elsewhere (a path of the machine that ran it means nothing in a committed
    folder). Options may be abbreviated (`--results`) or joined to their value
    (`--results-dir=x`), as argparse allows. `parser`: the program's (built when not given)."""
    argv = with_command(sys.argv[1:] if argv is None else argv)
    parser = parser or build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    command = sub.choices.get(argv[0]) if argv else None
    actions = [a for a in (command._actions if command else []) if a.type is path]
    names = tuple(name for a in actions for name in a.option_strings)

    def value(text: str, option: str | None) -> str:
        if option is None:
            return text
        # A path option not known to hold a results directory or a folder in one is a folder.
        return paths.recorded(path(text), results_dir=paths.PATH_OPTIONS.get(option, False))

    return shlex.join(["python", "-m", "bench", *paths.map_values(argv, value, names)])


def run() -> NoReturn:
    """The `ampbench` console script."""
    sys.exit(main())
