"""Real data that ships with ampbench: data sources a workload trains on, apart from the model.

A data source knows its task (`causal-lm` text, `image-cls` images), its sizes (a vocabulary, a
number of classes) and a fixed train / held-out split, and makes batches on a device. Nothing is
downloaded: the files are in `files/` (their origin and licence: `files/README.md`).

May import: torch, `bench.faults`."""
