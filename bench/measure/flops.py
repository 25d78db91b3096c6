"""Counted FLOPs of one train step of any model, by `torch.utils.flop_counter.FlopCounterMode`:
matmul-like ops only (so the floor is a lower bound), best counted on the meta device, attention
counted dense; `conv_backward_flop` fixes torch's count for grouped convolutions."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import torch
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode, conv_flop_count

MODEL = "<model>"
"""Key of `*_by_module` for work done inside the model but outside any of its submodules."""
OUTSIDE = "<outside>"
"""Key of `*_by_module` for work done outside the model (the loss function)."""


def conv_backward_flop(
    grad_out_shape: torch.Size,
    x_shape: torch.Size,
    w_shape: torch.Size,
    _bias_sizes: object,
    _stride: object,
    _padding: object,
    _dilation: object,
    transposed: bool,
    _output_padding: object,
    _groups: int,
    output_mask: list[bool],
    out_shape: object = None,
    **kwargs: object,
) -> int:
    """FLOPs of `aten.convolution_backward` (arguments as shapes): the forward convolution's count
    (torch's `conv_flop_count`, right for grouped and transposed ones) for each of the input and
    weight gradients it computes; the bias gradient, a sum, counts zero.

    Why not torch's `conv_backward_flop` (torch 2.14.1): it ignores `groups` in the weight
    gradient, so a 64-channel depthwise 7×7 convolution's backward came to 65× its forward, not
    2×. For `groups=1` both give the same number."""
    forward = conv_flop_count(list(x_shape), list(w_shape), list(grad_out_shape), transposed)
    return forward * (int(output_mask[0]) + int(output_mask[1]))


FORMULAS = {torch.ops.aten.convolution_backward: conv_backward_flop}
"""FLOP formulas that replace torch's, as `FlopCounterMode(custom_mapping=FORMULAS)` takes them."""


def count(
    model: nn.Module,
    batch: tuple[torch.Tensor, torch.Tensor],
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
) -> dict[str, int | dict[str, int]]:
    """FLOPs of one step's forward (`loss_fn(model(inputs), targets)`) and backward (the
    parameters' gradients, by `torch.autograd.grad`: `.grad` is left as it was, and the inputs'
    gradient is not counted), as `fwd_flop`, `bwd_flop`, `step_flop`, and `fwd_flop_by_module`,
    `bwd_flop_by_module`: module name -> its own ops' FLOPs (submodules excluded), for the
    modules that did counted work.

    One counter spans both phases: only the counter that saw the forward attributes the
    backward's matmuls to modules."""
    inputs, targets = batch
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("count needs a model with parameters that require grad")
    # The CPU's fused attention has no FLOP formula: count it through the math backend instead.
    backend = (
        sdpa_kernel(SDPBackend.MATH) if inputs.device.type == "cpu" else contextlib.nullcontext()
    )
    with backend, FlopCounterMode(display=False, custom_mapping=FORMULAS) as counter:
        loss = loss_fn(model(inputs), targets)
        fwd = _self_flops(counter.get_flop_counts())
        torch.autograd.grad(loss, params)
        both = _self_flops(counter.get_flop_counts())
    bwd = {name: both[name] - fwd.get(name, 0) for name in both}
    bwd = {name: flops for name, flops in bwd.items() if flops}
    fwd_total, bwd_total = sum(fwd.values()), sum(bwd.values())
    return {
        "fwd_flop": fwd_total,
        "bwd_flop": bwd_total,
        "step_flop": fwd_total + bwd_total,
        "fwd_flop_by_module": fwd,
        "bwd_flop_by_module": bwd,
    }


def _self_flops(counts: dict[str, dict[object, int]]) -> dict[str, int]:
    """FlopCounterMode's per-module counts -> module name -> FLOPs of its own ops.

    The counter reports each module's total including its submodules, under names prefixed by
    the root module's class name (`GPT.blocks.0.attn`), plus `Global` for everything. A module's
    own share is its total less those of its nearest counted descendants (a container that is
    never called, such as a ModuleList, does not appear, so the nearest counted ancestor stands
    in for the parent)."""
    totals = {name: sum(ops.values()) for name, ops in counts.items()}
    own = dict(totals)
    for name, flops in totals.items():
        if name == "Global":
            continue
        parent = _nearest_ancestor(name, totals)
        own[parent] -= flops
    out: dict[str, int] = {}
    for name, flops in own.items():
        if not flops:
            continue
        if name == "Global":
            key = OUTSIDE
        elif "." not in name:
            key = MODEL
        else:
            key = name.split(".", 1)[1]  # drop the root's class name: named_modules() spelling
        out[key] = flops
    return out


def _nearest_ancestor(name: str, present: dict[str, int]) -> str:
    """The longest proper prefix of `name` at a dot that the counter reported, else `Global`."""
    parts = name.split(".")
    for n in range(len(parts) - 1, 0, -1):
        candidate = ".".join(parts[:n])
        if candidate in present:
            return candidate
    return "Global"
