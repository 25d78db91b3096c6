"""What each command of `ampbench` does: one module per command, named after it, whose
`run(args) -> exit status` takes the arguments `bench.cli` parsed. They import jobs, publishing
and execution at their top: `bench.cli.main` imports only the one chosen."""
