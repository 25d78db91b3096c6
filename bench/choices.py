"""What the command line offers before it has imported torch: the names of each registry's rows,
and the defaults its help shows.

`--help` and the commands that only read folders (report, index, export, ...) must not wait
seconds for torch, pandas and matplotlib to import, but the registries (`bench.modes.MODES`,
`bench.model.PRESETS`, `bench.variants.VARIANTS`, `bench.parallel.PARALLELS`) hold torch dtypes
and factories. So the parser takes its choices from here, and each registry stays the one place a
row is defined: tests/test_cli.py checks that every tuple below equals its registry's keys, so a
row added there and not here fails the tests. Imports nothing of the project.
"""

from __future__ import annotations

MODES = (
    "fp32",
    "tf32",
    "fp16-amp",
    "fp16-amp-noscale",
    "bf16-amp",
    "bf16-pure",
    "bf16-pure-sr",
    "fp8-tensorwise",
    "fp8-rowwise",
)
"""Keys of `bench.modes.MODES`, in its order."""
OPTIMIZERS = ("foreach", "fused")
"""Keys of `bench.modes.OPTIMIZERS`."""
PRESETS = ("seed", "tiny")
"""Keys of `bench.model.PRESETS`."""
VARIANTS = ("eager", "compile", "compile-max", "compile-graphs", "cudagraph")
"""Keys of `bench.variants.VARIANTS`."""
DEFAULT_VARIANTS = ("eager", "compile", "cudagraph")
"""`bench.variants.DEFAULT_VARIANTS`: a GPU run's default variants."""
PARALLELS = ("none", "ddp", "ddp-bf16", "fsdp", "fsdp-bf16")
"""Keys of `bench.parallel.PARALLELS`."""
EXPORT_FORMATS = ("github-action-benchmark",)
"""`bench.export.FORMATS`."""

DEFAULT_BATCH_SIZES = (256, 1024, 4096)
"""Batch sizes (per GPU) of a timing run when `--batch-sizes` is not given."""
