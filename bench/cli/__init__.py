"""The command line: `ampbench COMMAND ...` (the same as `python -m bench` and
`./run_bench.sh`). It owns parsing only: `main` builds the parser from one module per command
(`run`, `report`, `headline`, `compare`, `numerics`, `maxbatch`, `index`, `promote`, `history`,
`export`, `readme`, `publish`, `check`), each of which adds its options and calls one function
of the module that owns the job; the options of a job's settings are made from the fields of its
config dataclass (`fields`), and `argv` holds what a command line says beyond its values (the
command env.json records, the options given, the results folder). Imports at module level what
imports no torch, pandas or matplotlib (the cases, faults, the studies' configs), and the rest
inside a command, each such import saying which of them it defers: parsing imports none of them,
so `--help` answers at once. However a command ends, `main` writes how to the file
AMPBENCH_RESULT_JSON names, if any (`bench.outcome`)."""

from bench.cli.argv import results_dir, with_command
from bench.cli.commands import build_parser
from bench.cli.main import command_line, main, run
from bench.cli.options import version

__all__ = ["build_parser", "command_line", "main", "results_dir", "run", "version", "with_command"]
