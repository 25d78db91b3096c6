"""What the command line offers before it has imported torch: the names of each registry's rows,
and the defaults its help shows.

`--help` and the commands that only read folders (report, index, export, ...) must not wait
seconds for torch, pandas and matplotlib to import, but the registries (`bench.recipes.modes.MODES`,
`bench.workloads.mlp.PRESETS`, `bench.execution.variants.VARIANTS`,
`bench.execution.parallel.PARALLELS`) hold torch dtypes
and factories. So the parser takes its choices from here, and each registry stays the one place a
row is defined: tests/test_cli.py checks that every tuple below equals its registry's keys, so a
row added there and not here fails the tests. Imports nothing of the project but the torch-free
mode table.
"""

from __future__ import annotations

from bench.recipes.catalog import CARDS

MODES = tuple(CARDS)
"""Keys of `bench.recipes.modes.MODES`, in its order."""
OPTIMIZERS = ("foreach", "fused")
"""Keys of `bench.recipes.modes.OPTIMIZERS`."""
PRESETS = ("seed", "tiny")
"""Keys of `bench.workloads.mlp.PRESETS`."""
WORKLOADS = {
    "mlp": PRESETS,
    "gpt": ("gpt2-124m", "gpt-1.3b", "tiny", "shakespeare-char", "shakespeare-tiny"),
    "resnet50": ("resnet50", "tiny"),
}
"""Keys of `bench.workloads.registry.WORKLOADS`, each with its presets' names."""
ZOOS = ("hf", "timm", "torchvision")
"""Keys of `bench.workloads.registry.ZOOS`: a `--model` value `PREFIX:NAME` is a zoo model."""
VARIANTS = ("eager", "compile", "compile-max", "compile-graphs", "cudagraph")
"""Keys of `bench.execution.variants.VARIANTS`."""
DEFAULT_VARIANTS = ("eager", "compile", "cudagraph")
"""`bench.execution.variants.DEFAULT_VARIANTS`: a GPU run's default variants."""
PARALLELS = ("none", "ddp", "ddp-bf16", "fsdp", "fsdp-bf16")
"""Keys of `bench.execution.parallel.PARALLELS`."""
EXPORT_FORMATS = ("github-action-benchmark",)
"""`bench.publish.export.FORMATS`."""

MIN_EFFECT = 0.02
"""The smallest relative change a timing verdict calls faster or slower, unless told otherwise
(`--min-effect`): a change below it is not worth a verdict, however sure. Defined here, once,
because the help shows it before anything heavy is imported; `bench.measure.stats` reads it."""
CONFIDENCE = 0.95
"""The confidence of a timing verdict's interval, unless told otherwise (`--confidence`); 1 minus
it is the level of its test. Read by `bench.measure.stats` as `MIN_EFFECT` is."""

DEFAULT_BATCH_SIZES = (256, 1024, 4096)
"""Batch sizes (per GPU) of a timing run when `--batch-sizes` is not given."""
