"""The command line: `ampbench COMMAND ...` (the same as `python -m bench` and
`./run_bench.sh`). It only parses: one module per command adds its options (`table` lists them),
and `main` imports the chosen command's action (`bench.commands`), so `--help` imports no torch,
pandas or matplotlib. How a command ends is written where AMPBENCH_RESULT_JSON names."""

from bench.cli.main import command_line, main, run, with_command
from bench.cli.options import version
from bench.cli.table import build_parser

__all__ = ["build_parser", "command_line", "main", "run", "version", "with_command"]
