"""The precision recipes: `modes` (one row per mode: how it prepares the model, the context its
forward runs in, whether it scales the loss, the optimizer's dtype) and the one train step
(`step`) that serves every mode through that row; `fp8` converts a model's Linears for a float8
recipe.

May import: torch, `bench.cases`, `bench.workloads`, `bench.faults`."""
