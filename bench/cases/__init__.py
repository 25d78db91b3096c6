"""The case and its axes: `Case` (one point of the grid, every axis a field, validated once),
the grid of a timing run (`grid`: `RunConfig`, the index's grid line), the settings of a
largest-batch search (`maxbatch`), the one set of validators (`checks`), case ids, and the names
of every registry's rows without torch (`choices`), which the command line offers.

May import: `bench.faults`, the torch-free mode table (`bench.recipes.catalog`) and the
workloads' torch-free cards (`bench.workloads.catalog`), and no registry (torch), inside a
function either: a case is names and numbers, checked against `choices` and the cards. What
needs a registry is asked above it: a case's workload and size (`bench.workloads.registry`:
`get(case.model)`, `size_of`, `make_case`), a new job's config from the user's options
(`bench.jobs.configs`). Imported by everything that makes or reads a case."""
