"""Real data that ships with ampbench (`files/`, origin and licence in `files/README.md`): data
sources a workload trains on, each with its task, sizes and a fixed train / held-out split.

May import: torch, `bench.faults`."""
