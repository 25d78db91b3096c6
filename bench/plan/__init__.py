"""A case resolved and trained: `plan` (`resolve`, the one resolver, called at a job's entry;
`Plan`, the objects one case runs with), `float8_plan` (which Linears a float8 mode converts, and
why) and `step` (`build`, the one maker of a train state, and the one train step). May import:
torch, `bench.modes`, `bench.workloads`, `bench.cases` and below."""
