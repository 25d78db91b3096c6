"""The command table: each command's parsing module here and its action module,
`bench.commands.<NAME>` with `run(args) -> exit status`."""

from __future__ import annotations

from types import ModuleType

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
    pages,
    promote,
    publish,
    quality,
    readme,
    record,
    report,
    sweep,
)
from bench.cli import run as run_command
from bench.cli.options import PROG, Parser, Version

MODULES: tuple[ModuleType, ...] = (
    run_command,
    report,
    headline,
    compare,
    ab,
    numerics,
    quality,
    maxbatch,
    index,
    promote,
    history,
    export,
    readme,
    publish,
    pages,
    check,
    sweep,
    record,
)
"""The parsing modules in the order `--help` lists them."""

COMMANDS = {module.NAME: module for module in MODULES}
"""Each command's parsing module: `NAME` and `add(subparsers)`; and `PASSES_ON`, the command
whose options it takes besides its own, where it gives them on (`args.passed_on`; any other
command refuses an option it does not know)."""

ACTIONS = {name: f"bench.commands.{name}" for name in COMMANDS}
"""Each command's action module, by dotted path: `bench.cli.main` imports only the one chosen."""

RENAMED = {module.OLD_NAME: module.NAME for module in MODULES if hasattr(module, "OLD_NAME")}
"""A command's old name -> its name: the old one still runs it, for now (`bench.cli.main`)."""


def build_parser() -> Parser:
    p = Parser(
        prog=PROG,
        description="ampbench: a benchmark harness for PyTorch mixed-precision training. "
        "With no command (nothing, or options only) it runs `run`, as `./run_bench.sh` and "
        "`python -m bench` do.",
    )
    p.add_argument("--version", action=Version)
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser, metavar="COMMAND")
    for module in MODULES:
        module.add(sub)
    return p
