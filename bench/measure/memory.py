"""Memory of one train step, measured in a pass of its own (it synchronizes between phases, so it
never runs inside the timed window), and the dtypes the step produced. GiB are 2**30 bytes;
the columns are described in docs/results-folder.md. On the CPU the peaks are left empty."""

from __future__ import annotations

import math
from collections.abc import Iterable

import torch

from bench.modes.mode import dtype_name
from bench.plan.step import TrainState, backward, forward, optimizer_step, train_step
from bench.workloads import outputs

GIB = 2**30


def _local(t: torch.Tensor) -> torch.Tensor:
    """This rank's part of a tensor: the shard of an FSDP2 DTensor, the tensor itself else."""
    return t.to_local() if hasattr(t, "to_local") else t


def _gib(tensors: Iterable[torch.Tensor]) -> float:
    return sum(_local(t).numel() * t.element_size() for t in tensors) / GIB


def measure(s: TrainState) -> dict[str, object]:
    """Run two steps: the first creates Adam's state, the second is measured phase by phase."""
    cuda = s.case.device == "cuda"

    def sync_and_peak() -> tuple[float, float]:
        if not cuda:
            return math.nan, math.nan
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated() / GIB, torch.cuda.max_memory_reserved() / GIB
        torch.cuda.reset_peak_memory_stats()
        return peak

    def allocated() -> float:
        return torch.cuda.memory_allocated() / GIB if cuda else math.nan

    counts_before = _counts() if cuda else {}
    train_step(s)
    sync_and_peak()
    before_fwd = allocated()
    output, loss = forward(s)
    peak_fwd, res_fwd = sync_and_peak()
    act = allocated() - before_fwd
    logits = outputs.tensor(output)  # the model's output may be a tuple, a dict, a ModelOutput
    dtypes = {"output_dtype": dtype_name(logits.dtype), "loss_dtype": dtype_name(loss.dtype)}
    del output, logits
    backward(s, loss)
    peak_bwd, res_bwd = sync_and_peak()
    # The gradient of the model's first parameter (the first Linear's weight of the MLP): every
    # `param.grad` has its parameter's dtype, so one stands for all of them.
    grad = next((p.grad for p in s.model.parameters() if p.grad is not None), None)
    dtypes["param_grad_dtype"] = dtype_name(grad.dtype) if grad is not None else "none"
    grads = _gib(p.grad for p in s.model.parameters() if p.grad is not None)
    optimizer_step(s)
    peak_opt, res_opt = sync_and_peak()
    state = [t for st in s.optimizer.state.values() for t in st.values() if torch.is_tensor(t)]
    counts_after = _counts() if cuda else {}
    return {
        "peak_alloc_gib": max(peak_fwd, peak_bwd, peak_opt),
        "peak_reserved_gib": max(res_fwd, res_bwd, res_opt),
        "peak_fwd_gib": peak_fwd,
        "peak_bwd_gib": peak_bwd,
        "peak_opt_gib": peak_opt,
        "param_gib": _gib(s.model.parameters()),
        "grad_gib": grads,
        "optim_state_gib": _gib(state),
        "act_gib": act,
        **{k: counts_after.get(k, math.nan) - counts_before.get(k, math.nan) for k in COUNTS},
        **dtypes,
    }


COUNTS = {"alloc_retries": "num_alloc_retries", "ooms": "num_ooms"}
"""The allocator's counters a row reports (column -> `torch.cuda.memory_stats` key)."""


def _counts() -> dict[str, float]:
    """The allocator's cumulative counters now: the measured steps' are the difference."""
    stats = torch.cuda.memory_stats()
    return {col: float(stats.get(key, math.nan)) for col, key in COUNTS.items()}
