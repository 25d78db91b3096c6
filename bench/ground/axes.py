"""The execution variants and the parallelisms as plain data, without torch: the one place each row
is defined (run by `bench.execution.variants` and `bench.execution.parallel`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Variant:
    """How the one train step is executed: eagerly, compiled, or captured in a CUDA graph."""

    name: str
    compile_mode: str | None = None
    """`torch.compile` mode for the model and loss; None leaves them eager."""
    capture: bool = False
    """Capture the whole step in a CUDA graph by hand."""
    in_default_grid: bool = True
    """In a GPU run's default grid (`compile-max` autotunes for minutes per case, and
    `compile-graphs` repeats what `cudagraph` measures through the compiler: both only when asked
    for). A CPU run's default is `eager` alone."""

    @property
    def graphs(self) -> bool:
        """Outputs live in CUDA graph memory that the next replay overwrites."""
        return self.capture or self.compile_mode == "reduce-overhead"


VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        Variant(name="eager"),
        Variant(name="compile", compile_mode="default"),
        Variant(
            name="compile-max", compile_mode="max-autotune-no-cudagraphs", in_default_grid=False
        ),
        Variant(name="compile-graphs", compile_mode="reduce-overhead", in_default_grid=False),
        Variant(name="cudagraph", capture=True),
    )
}
"""Every execution variant, in the order of `--help` and reports."""


def default_variants() -> tuple[str, ...]:
    """A GPU run's variants when none are asked for."""
    return tuple(name for name, v in VARIANTS.items() if v.in_default_grid)


@dataclass(frozen=True, kw_only=True)
class Parallel:
    """How one case's model is spread over the ranks of a distributed run."""

    name: str
    kind: str
    """`none`, `ddp` or `fsdp`."""
    reduce_dtype: str | None = None
    """`float32`: gradients reduced as they are (DDP) or in float32 (FSDP2); `bfloat16`:
    compressed by DDP's hook, or reduced in bfloat16 by FSDP2."""

    @property
    def distributed(self) -> bool:
        return self.kind != "none"


PARALLELS: dict[str, Parallel] = {
    p.name: p
    for p in (
        Parallel(name="none", kind="none"),
        Parallel(name="ddp", kind="ddp", reduce_dtype="float32"),
        Parallel(name="ddp-bf16", kind="ddp", reduce_dtype="bfloat16"),
        Parallel(name="fsdp", kind="fsdp", reduce_dtype="float32"),
        Parallel(name="fsdp-bf16", kind="fsdp", reduce_dtype="bfloat16"),
    )
}
"""Every parallelism (`bench.execution.parallel` says what each does)."""
