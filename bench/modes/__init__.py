"""The precision modes: `catalog` (the torch-free mode table and the Adams'), `mode` (each card's
torch side), `plan` (a case resolved into the objects it runs with), `step` (the one train step)
and `fp8` (float8 conversion of a model's Linears).

May import: torch, `bench.cases`, `bench.workloads`, `bench.faults`."""
