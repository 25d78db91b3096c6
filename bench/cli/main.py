"""`main(argv)`: parse, call the command's one function, and turn what went wrong into one line
and an exit status."""

from __future__ import annotations

import sys
from typing import NoReturn

from bench.cli import (
    ab,
    check,
    compare,
    export,
    headline,
    history,
    index,
    maxbatch,
    numerics,
    promote,
    publish,
    readme,
    report,
)
from bench.cli import run as run_command
from bench.cli.argv import with_command
from bench.cli.options import PROG, Parser, Version
from bench.faults import Interrupted, UsageError

COMMANDS = {
    module.NAME: module
    for module in (
        run_command,
        report,
        headline,
        compare,
        ab,
        numerics,
        maxbatch,
        index,
        promote,
        history,
        export,
        readme,
        publish,
        check,
    )
}
"""Each command's module: `NAME`, `add(subparsers)` and `command(args) -> exit status`."""


def build_parser() -> Parser:
    p = Parser(
        prog=PROG,
        description="ampbench: a benchmark harness for PyTorch mixed-precision training. "
        "With no command (nothing, or options only) it runs `run`, as `./run_bench.sh` and "
        "`python -m bench` do.",
    )
    p.add_argument("--version", action=Version)
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser, metavar="COMMAND")
    for module in COMMANDS.values():
        module.add(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    """`ampbench ARGV`: the exit status (0; 1 when a run or check found a failure; 2 for bad
    input, a setting a config refused among them (`options.settings`); 130 when interrupted)."""
    try:
        argv = with_command(sys.argv[1:] if argv is None else argv)
        args = build_parser().parse_args(argv)
        args.argv = argv  # what a relaunch repeats
        return COMMANDS[args.command].command(args)
    except UsageError as exc:
        print(f"ampbench: error: {exc}", file=sys.stderr)
        return 2
    except Interrupted as exc:
        print(f"ampbench: {exc}", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print("ampbench: interrupted; every finished part is kept in its folder", file=sys.stderr)
        return 130


def run() -> NoReturn:
    """The `ampbench` console script."""
    sys.exit(main())
