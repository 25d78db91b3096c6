"""The time-to-quality study (docs/quality.md): its settings (`config`), a workload sized to real
data and its batches (`feed`), one run and its GradScaler check (`train`), and its tables.

May import: torch, `bench.cases`, `bench.store`, `bench.data`, `bench.workloads`, `bench.modes`,
`bench.plan`, `bench.measure`."""
