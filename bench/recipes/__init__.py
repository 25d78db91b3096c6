"""The precision recipes: `catalog` (the mode table, one torch-free card per mode, and the Adams'
table), `modes` (each card's torch side: how it prepares the model, the context its forward runs
in, whether it scales the loss, the optimizer), `plan` (a case resolved into the objects it runs
with) and the one train step (`step`) that serves every mode through its plan; `fp8` converts a
model's Linears for a float8 recipe.

May import: torch, `bench.cases`, `bench.workloads`, `bench.faults`."""
