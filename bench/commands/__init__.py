"""What each command of `ampbench` does: `bench.commands.<NAME>.run(args) -> exit status`, on the
arguments `bench.cli` parsed, importing jobs and publishing at its top."""
