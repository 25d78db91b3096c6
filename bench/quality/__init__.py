"""The time-to-quality study: each precision recipe trained on real data (`bench.data`), from the
same initial weights per seed, until a held-out quality target or a step budget, with the step
time measured apart from training by the harness's timing function. Its verdicts are
`bench.verdicts.training`'s; its report is `bench.publish.quality`'s.

- config.py: the study's settings (nanoGPT's Shakespeare recipe by default), validated once.
- feed.py: a workload sized to a data source, and the batches it trains and is judged on.
- train.py: one run of one recipe and seed; the step it times; the GradScaler check.
- tables.py: the files a study writes and reads back, without torch.

May import: torch, `bench.cases`, `bench.store`, `bench.data`, `bench.workloads`, `bench.recipes`,
`bench.measure`."""
