"""The ground floor: the torch-free tables every floor reads, each a registry of rows by name:
the precision modes (`catalog`), the optimizers (`optimizers`), the built-in workloads (`cards`),
the execution variants and the parallelisms (`axes`). What a case, the store, the verdicts and
the command line check a name against, without torch.

May import: nothing of ampbench but its own modules; no torch, no pandas."""
