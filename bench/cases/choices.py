"""What the command line offers before it has imported torch: the names of each registry's rows,
and the defaults its help shows.

`--help` and the commands that only read folders (report, index, export, ...) must not wait
seconds for torch, pandas and matplotlib to import, but the registries (`bench.recipes.modes.MODES`,
`bench.execution.variants.VARIANTS`, `bench.execution.parallel.PARALLELS`) hold torch dtypes
and factories. So the parser takes its choices from here, and each registry stays the one place a
row is defined: tests/test_cli.py checks that every tuple below equals its registry's keys, so a
row added there and not here fails the tests. The workloads' and the modes' names are not copied:
they come from their torch-free tables (`bench.workloads.catalog`, `bench.recipes.catalog`), the
only modules of the project imported here.
"""

from __future__ import annotations

from bench.recipes.catalog import CARDS
from bench.workloads import catalog as workloads

MODES = tuple(CARDS)
"""Keys of `bench.recipes.modes.MODES`, in its order."""
OPTIMIZERS = ("foreach", "fused")
"""Keys of `bench.recipes.modes.OPTIMIZERS`."""
WORKLOADS = {name: card.presets for name, card in workloads.CARDS.items()}
"""The built-in workloads, each with its presets' names (`bench.workloads.catalog`)."""
DEFAULT_WORKLOAD = workloads.DEFAULT
"""The workload of a case that names none (and of every row older than the `model` axis)."""
SIZES = {name: card.sizes for name, card in workloads.CARDS.items()}
"""The built-in workloads, each with its sizes' names, in its order (`bench.cases.sizes`)."""
PRESETS = WORKLOADS[workloads.DEFAULT]
"""The default workload's presets' names."""
ZOOS = workloads.ZOOS
"""The zoos' prefixes: a `--model` value `PREFIX:NAME` is a zoo model."""
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
