"""How a train step is executed: `variants` (eager, torch.compile, CUDA graphs),
`parallel` (DDP, FSDP2 over ranks), `distributed` (the process group a run of several ranks
shares) and `launch` (torchrun, and what a killed rank leaves behind).

May import: `bench.recipes` and below (`bench.workloads`, `bench.cases`, `bench.faults`),
`bench.store` for a folder's file names."""
