"""How a train step is executed: `variants` (eager, compiled, CUDA graphs), `parallel` (DDP,
FSDP2), `distributed` (the ranks' process groups) and `launch` (torchrun, and what a killed rank
leaves behind). May import: `bench.plan` and below (`bench.store` for a folder's file names)."""
