"""A case resolved and trained: `plan` (`resolve`, the one resolver, called at a job's entry, and
`Plan`, the objects one case runs with, and its `StepOptions`), `float8_plan` (which Linears a
float8 mode converts, and why a plan that converts none cannot run) and `step` (`build`, the one
maker of a train state, and the one train step every mode and study runs).

May import: torch, `bench.modes`, `bench.workloads`, `bench.cases` and below."""
