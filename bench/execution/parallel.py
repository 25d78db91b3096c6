"""Parallelism as data: how one case's model is spread over the ranks (`none`, `ddp`, `ddp-bf16`,
`fsdp`, `fsdp-bf16`, all PyTorch's own: docs/several-gpus.md); `wrap` applies a row, and
`gradient_sync_off` times the step without gradient sync, for `comm_ms`."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import torch
from torch import nn

from bench.faults import Unsupported, error_summary
from bench.ground.axes import Parallel
from bench.modes.mode import Mode, dtype_name

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
"""A row's reduce dtype by name."""


def reduce_dtype(p: Parallel) -> torch.dtype | None:
    """The dtype a row reduces gradients in, as torch names it (None for `none`)."""
    return _DTYPES[p.reduce_dtype] if p.reduce_dtype is not None else None


def param_dtype(mode: Mode) -> torch.dtype | None:
    """FSDP2's `param_dtype` for this mode: its compute dtype under autocast; None otherwise,
    which all-gathers the parameters in their own dtype (float32, or bfloat16 for a mode that
    casts them)."""
    return mode.autocast_dtype


def _gathered_dtype(mode: Mode) -> torch.dtype:
    """The dtype FSDP2's all-gathers move for this mode."""
    return param_dtype(mode) or mode.param_dtype or torch.float32


def _reduced_dtype(p: Parallel, mode: Mode) -> torch.dtype:
    """The dtype the gradients travel in: DDP all-reduces `param.grad` as it is (the
    parameters' dtype: float32 under autocast, bfloat16 for pure bf16) unless its hook
    compresses them; FSDP2 reduce-scatters in its policy's reduce dtype."""
    if p.kind == "ddp" and p.reduce_dtype == "float32":
        return mode.param_dtype or torch.float32
    return reduce_dtype(p) or torch.float32


def check_reduces(group: torch.distributed.ProcessGroup, dtype: torch.dtype, device: str) -> None:
    """Raise `Unsupported` when `group` cannot all-reduce `dtype`. gloo's support for bfloat16
    depends on the torch version ("Invalid scalar type" or a TypeError where it has none), so it
    is tried, once per case, with one element, on every rank alike; NCCL reduces bfloat16 on any
    GPU that has it and is not asked."""
    backend = torch.distributed.get_backend(group)
    if backend != "gloo":
        return
    try:
        torch.distributed.all_reduce(torch.zeros(1, dtype=dtype, device=device), group=group)
    except (RuntimeError, TypeError) as exc:
        raise Unsupported(
            f"{backend} in torch {torch.__version__} cannot all-reduce {dtype_name(dtype)} "
            f"({error_summary(exc)})"
        ) from exc


def wrap(
    model: nn.Module,
    mode: Mode,
    *,
    parallel: Parallel,
    group: torch.distributed.ProcessGroup,
    device: str,
    blocks: Callable[[nn.Module], list[nn.Module]],
) -> nn.Module:
    """The module the step calls: `model` under DDP or FSDP2 over `group` (`parallel`, a row of
    `bench.ground.axes.PARALLELS`), or `model` itself for `none`. `blocks` gives the modules of the
    (prepared) model that FSDP2 shards one by one before the root (`Workload.blocks`). Call it
    before the optimizer is built: FSDP2 replaces the parameters by their shards."""
    p = parallel
    if p.kind == "ddp":
        from torch.nn.parallel import DistributedDataParallel

        ids = [torch.cuda.current_device()] if device == "cuda" else None
        ddp = DistributedDataParallel(model, device_ids=ids, process_group=group)
        if p.reduce_dtype == "bfloat16":
            check_reduces(group, torch.bfloat16, device)
            from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import (
                bf16_compress_hook,
            )

            # The hook's state is the group it all-reduces over (None would mean the default).
            ddp.register_comm_hook(group, bf16_compress_hook)
        return ddp
    if p.kind == "fsdp":
        from torch.distributed.device_mesh import DeviceMesh
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        # FSDP2 shards a parameter along dim 0 of its storage and refuses a non-contiguous one
        # ("FSDP does not support non-contiguous parameters yet"): a channels-last network's
        # convolution weights go back to the default layout before sharding (its inputs stay
        # channels-last; cuDNN then picks the layout of each convolution).
        if any(not p.is_contiguous() for p in model.parameters()):
            model.to(memory_format=torch.contiguous_format)
        mesh = DeviceMesh.from_group(group, device)
        policy = MixedPrecisionPolicy(param_dtype=param_dtype(mode), reduce_dtype=reduce_dtype(p))
        # Each block is its own unit (its all-gather and reduce-scatter overlap the others'
        # compute), then the root, which holds what no block does, as torchtitan's
        # parallelize does.
        for block in blocks(model):
            fully_shard(block, mesh=mesh, mp_policy=policy)
        fully_shard(model, mesh=mesh, mp_policy=policy)
        return model
    return model


@contextlib.contextmanager
def gradient_sync_off(module: nn.Module, parallel: Parallel) -> Iterator[None]:
    """The step without gradient synchronization, to time what the collectives cost. DDP:
    `no_sync()`, no all-reduce. FSDP2: `set_requires_gradient_sync(False)` turns off the gradient
    reduce-scatter but not the all-gathers, and leaves the optimizer no sharded gradient: so
    `comm_ms` is taken from forward plus backward (for FSDP, the reduce-scatter left unhidden)."""
    kind = parallel.kind
    if kind == "ddp":
        with module.no_sync():
            yield
    elif kind == "fsdp":
        module.set_requires_gradient_sync(False)
        try:
            yield
        finally:
            module.set_requires_gradient_sync(True)
    else:
        yield


def collective_bytes(num_params: int, parallel: Parallel, mode: Mode) -> dict[str, float]:
    """Bytes of each collective one step runs, at the full (unsharded) size as nccl-tests counts
    it. DDP all-reduces every gradient once (`_reduced_dtype`); FSDP2 all-gathers the parameters
    twice (forward, and backward after resharding) in `_gathered_dtype` and reduce-scatters the
    gradients once."""
    p = parallel
    out = {"all_reduce": 0.0, "reduce_scatter": 0.0, "all_gather": 0.0}
    if not p.distributed:
        return out
    reduce_bytes = num_params * _itemsize(_reduced_dtype(p, mode))
    if p.kind == "ddp":
        out["all_reduce"] = float(reduce_bytes)
    else:
        out["reduce_scatter"] = float(reduce_bytes)
        out["all_gather"] = 2.0 * num_params * _itemsize(_gathered_dtype(mode))
    return out


def _itemsize(dtype: torch.dtype | None) -> int:
    return torch.empty((), dtype=dtype or torch.float32).element_size()
