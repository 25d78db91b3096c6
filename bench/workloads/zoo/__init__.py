"""Real models by name from three zoos, random weights from their configs: `hf:NAME`, `timm:NAME`,
`torchvision:NAME` (docs/zoo.md, docs/own-model.md); `common` holds what they share.
May import: torch, the zoos' own packages (inside a function: each is optional),
`bench.workloads`, `bench.data.sources`, `bench.store.paths`, `bench.faults`."""
