"""Real models by name from the three zoos people train from, with random weights from their
configs: `hf:NAME` (Hugging Face transformers, `hf`), `timm:NAME` (`timm`) and
`torchvision:NAME` (`torchvision`). Nothing is downloaded: timm's and torchvision's models are
made with `pretrained=False` / `weights=None`, transformers' from a config class (or a local
config.json).

Each zoo model is a `Workload` like the built-in ones: its head decides the task, hence the
batch, the labels and the loss (`bench.workloads.heads`); its blocks, observed points, audited
weight and float8 exclusions are found in its module tree (`bench.workloads.structure`). Every
name has a `tiny` preset (for the CPU and the tests) and the model's real size.

A zoo whose package is missing still parses: every case of its models is an `unsupported` row
that says how to install it (the `[zoo]` extra), as torchvision's ResNet-50 does. A name the
installed zoo does not know is bad input: one line, exit status 2.

Dropout is off in every zoo model (its probabilities set to zero): a benchmark step should do the
same work every time, and dropout's masks would make two modes' numerics differ by more than
their precision (the built-in GPT has none either).

`common` holds what every zoo shares (`ZooSize`, `make`, `missing`, `importable`, the tiny
sizes, the batch and study sizes); each zoo is a module that imports it and offers
`workload(NAME)`; `bench.workloads.registry.ZOOS` maps each prefix to its zoo. Nothing here
imports the registry, and `common` imports no zoo.

May import: torch, the zoos' own packages (inside a function: each is optional),
`bench.workloads`, `bench.data.sources`, `bench.store.paths`, `bench.faults`."""
