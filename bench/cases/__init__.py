"""The case and its axes: `Case`, the grid of a timing run (`grid`), a largest-batch search's
settings (`maxbatch`), the validators (`checks`) and a workload's own sizes (`sizes`).

May import: `bench.faults`, `bench.ground` (the torch-free tables of the modes, the workloads,
the variants and the parallelisms); no registry (torch), inside a function either: what needs
one is asked above (`bench.plan.plan.resolve`)."""
