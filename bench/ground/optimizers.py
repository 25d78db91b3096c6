"""The optimizer table, without torch: the Adams a case may name (its `optimizer` axis), each
with the keyword arguments that choose torch's implementation, and those a timing run sweeps by
default. `bench.modes.mode.Mode.optimizer` builds the row a plan names."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Optimizer:
    """An Adam a case may name (its `optimizer` axis); `bench.modes.mode.Mode.optimizer`
    builds it with these keyword arguments, at the learning rate of the case and the betas and
    weight decay of the plan's step options (`bench.plan.plan.StepOptions`)."""

    name: str
    adam: dict[str, bool]
    """Keyword arguments of `torch.optim.Adam` (or `AdamW`) that choose the implementation."""
    why: str
    """What it does differently, in words (and why a row's timings differ)."""
    decay_groups: bool = False
    """torch's AdamW with nanoGPT's two parameter groups: the options' (decoupled) weight decay
    on the parameters of two or more dimensions (matmul weights, embeddings), none on biases and
    norms. False: torch's Adam, one group, no weight decay."""
    swept: bool = True
    """A new timing run sweeps it when no --optimizers are given."""


OPTIMIZERS: dict[str, Optimizer] = {
    o.name: o
    for o in (
        # GradScaler's step() reads found_inf on the host before calling step(): a device sync
        # that real training pays too.
        Optimizer(
            name="foreach",
            adam={"foreach": True},
            why="PyTorch's default multi-tensor kernels",
        ),
        # It takes GradScaler's scale and found_inf as tensors, unscales and skips on the device,
        # with no host sync. Its step counters live on the device already, but a CUDA graph
        # capture of step() still asks for capturable=True.
        Optimizer(
            name="fused",
            adam={"fused": True},
            why="one kernel per group of tensors, no host sync under GradScaler",
        ),
        # The quality study's (nanoGPT's train.py): on the CPU torch's default loop, on a GPU fused.
        Optimizer(
            name="adamw",
            adam={"fused": False},
            why="nanoGPT's AdamW: weight decay on the matmul weights and embeddings only",
            decay_groups=True,
            swept=False,
        ),
        Optimizer(
            name="adamw-fused",
            adam={"fused": True},
            why="nanoGPT's AdamW, fused, as its train.py runs it on a GPU",
            decay_groups=True,
            swept=False,
        ),
    )
}
"""The Adam implementations by name, in the order `--help` shows them."""


def default_optimizers() -> tuple[str, ...]:
    """The optimizers a new timing run sweeps when none are asked for, in table order."""
    return tuple(name for name, o in OPTIMIZERS.items() if o.swept)
