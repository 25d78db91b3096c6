"""The case and its axes: `Case` (one point of the grid, every axis a field, validated once),
the grid of a timing run (`grid`: `RunConfig`, the index's grid line), the settings of a
largest-batch search (`maxbatch`), the one set of validators (`checks`), case ids, and the
torch-free tables of the execution variants and the parallelisms (`axes`).

May import: `bench.faults`, the torch-free mode table (`bench.recipes.catalog`) and the
workloads' torch-free cards (`bench.workloads.cards`), and no registry (torch), inside a
function either: a case is names and numbers, checked against the torch-free tables. What
needs a registry is asked above it: a case's objects (`bench.recipes.plan.resolve`), a new
job's config from the user's options (`bench.jobs.configs`). Imported by everything that makes or
reads a case."""
