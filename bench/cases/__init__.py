"""The case and its axes: `Case`, a timing run's grid (`grid`), a largest-batch search's settings
(`maxbatch`), the validators (`checks`) and a workload's own sizes (`sizes`). May import:
`bench.faults`, `bench.ground` (the torch-free tables); no registry (torch), inside a function
either: what needs one is asked above (`bench.plan.plan.resolve`)."""
