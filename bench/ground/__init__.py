"""The ground floor: the torch-free tables every floor checks a name against, each a registry of
rows by name: the precision modes (`catalog`), the optimizers (`optimizers`), the built-in
workloads (`cards`), the execution variants and the parallelisms (`axes`). May import: nothing of
ampbench but its own modules; no torch, no pandas."""
