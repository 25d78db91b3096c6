"""The case and its axes: `Case`, the grid of a timing run (`grid`), a largest-batch search's
settings (`maxbatch`), the validators (`checks`), and the torch-free variant and parallel tables.

May import: `bench.faults`, `bench.modes.catalog`, `bench.workloads.cards`; no registry (torch),
inside a function either: what needs one is asked above (`bench.modes.plan.resolve`)."""
