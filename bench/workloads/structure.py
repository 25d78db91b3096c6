"""A model's structure found in its module tree, for models ampbench did not write: the blocks
FSDP2 shards, the points the numerics study observes, the audited weight, the head and tied
parameters, chosen among the modules that actually run in a forward (`call_order`)."""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from bench.workloads import outputs

MATMULS = (
    nn.Linear,
    nn.Conv1d,
    nn.Conv2d,
    nn.Conv3d,
    nn.ConvTranspose1d,
    nn.ConvTranspose2d,
    nn.ConvTranspose3d,
)
"""Modules whose weight gets its gradient from a matmul (a convolution is one, lowered)."""

_CONTAINERS = (nn.ModuleList, nn.Sequential, nn.ModuleDict)


def is_conv1d(module: nn.Module) -> bool:
    """transformers' `Conv1D` (GPT-2's projections): a Linear with its weight stored (in, out).
    Recognised by name and shape, so that this module needs no transformers."""
    return type(module).__name__ == "Conv1D" and hasattr(module, "nf") and module.weight.ndim == 2


def linear_shape(module: nn.Module) -> tuple[int, int] | None:
    """(in_features, out_features) of a Linear or a `Conv1D`; None for anything else."""
    if isinstance(module, nn.Linear):
        return module.in_features, module.out_features
    if is_conv1d(module):
        return module.weight.shape[0], module.nf
    return None


def linears(model: nn.Module) -> dict[str, tuple[int, int]]:
    """Every Linear and `Conv1D` by module name, as (in_features, out_features), in the order
    the model registers them."""
    out = {}
    for name, module in model.named_modules():
        shape = linear_shape(module)
        if shape is not None:
            out[name] = shape
    return out


def is_matmul(module: nn.Module) -> bool:
    return isinstance(module, MATMULS) or is_conv1d(module)


def tied(model: nn.Module) -> dict[str, str]:
    """Each parameter name that is an alias of another -> the name `named_parameters()` gives
    the shared tensor (the first place it is registered): `lm_head.weight` ->
    `transformer.wte.weight` for GPT-2's tied head."""
    first: dict[int, str] = {}
    out = {}
    for name, p in model.named_parameters(remove_duplicate=False):
        if id(p) in first:
            out[name] = first[id(p)]
        else:
            first[id(p)] = name
    return out


def call_order(model: nn.Module, inputs: torch.Tensor) -> tuple[list[str], dict[str, object]]:
    """The names of the modules that run in one forward of `inputs`, in the order they are
    first entered (the root, `""`, first), and the tensor each one's first call returned
    (`bench.workloads.outputs.tensor`; None where its output holds none). The forward runs
    without gradients and in eval mode (BatchNorm's running statistics untouched), and each
    module's mode is restored after."""
    order: list[str] = []
    produced: dict[str, object] = {}

    def enter(name: str) -> Callable:
        def hook(module, args):
            if name not in produced:
                produced[name] = None
                order.append(name)

        return hook

    def leave(name: str) -> Callable:
        def hook(module, args, output):
            # An output with no tensor in it (None, a cache object) produced nothing to observe.
            if produced.get(name) is None:
                with contextlib.suppress(TypeError):
                    produced[name] = outputs.tensor(output)

        return hook

    modes = {m: m.training for m in model.modules()}
    handles = [m.register_forward_pre_hook(enter(n)) for n, m in model.named_modules()]
    handles += [m.register_forward_hook(leave(n)) for n, m in model.named_modules()]
    try:
        model.eval()
        with torch.no_grad():
            model(inputs)
    finally:
        for h in handles:
            h.remove()
        for m, training in modes.items():
            m.train(training)
    return order, produced


@dataclass(frozen=True)
class Structure:
    """What `find` found, by module and parameter name (names stay valid when a mode swaps a
    Linear for float8's or casts the model)."""

    blocks: tuple[str, ...]
    """Module names of the repeated blocks, outermost, in the order they run."""
    observed: tuple[str, ...]
    """Module names whose outputs the study observes, in the order they run; the last one's
    output holds the logits: `""` (the root), unless another module returns that tensor."""
    audited: str
    """The parameter the audit's autograd chain and Adam state are recorded for."""
    head: str | None
    """The output Linear (or `Conv1D`), if the model has one."""


def find(model: nn.Module, inputs: torch.Tensor) -> Structure:
    """The structure of `model`, from its module tree and one forward of `inputs` (a small
    batch: it only has to reach every module)."""
    order, produced = call_order(model, inputs)
    ran = set(order)
    modules = dict(model.named_modules())
    blocks = repeated_blocks(model, ran, order)
    observed = _observed(modules, order, blocks)
    # The root's output is the last observed module's (a Sequential's last child): once.
    if (
        len(observed) > 1
        and produced.get("") is not None
        and produced[""] is produced.get(observed[-2])
    ):
        observed = observed[:-1]
    return Structure(
        blocks=tuple(blocks),
        observed=tuple(observed),
        audited=_audited(model, modules, order),
        head=head(model, order),
    )


def repeated_blocks(model: nn.Module, ran: set[str], order: list[str]) -> list[str]:
    """The blocks: instances (that ran) of the classes a Hugging Face model declares in
    `_no_split_modules` (on the model or any module inside a wrapper) that occur at least twice;
    else of the class most often found among the children of a ModuleList or Sequential (at
    least twice; ties go to the class with more parameters). Nested instances are left to the
    outermost. Empty when nothing repeats (a small CNN: FSDP2 then shards the root alone)."""
    by_class: dict[type, list[str]] = defaultdict(list)
    for name, module in model.named_modules():
        if not isinstance(module, (nn.ModuleList, nn.Sequential)):
            continue
        for child_name, child in module.named_children():
            full = f"{name}.{child_name}" if name else child_name
            # A block has submodules and weights; a container of containers is not one.
            if (
                full in ran
                and not isinstance(child, _CONTAINERS)
                and any(True for _ in child.children())
                and any(True for _ in child.parameters())
            ):
                by_class[type(child)].append(full)
    repeated = {cls: names for cls, names in by_class.items() if len(names) >= 2}
    declared = {
        cls_name
        for m in model.modules()
        for cls_name in (getattr(m, "_no_split_modules", None) or ())
    }
    chosen = [names for cls, names in repeated.items() if cls.__name__ in declared]
    if not chosen and repeated:
        modules = dict(model.named_modules())

        def weight(item: tuple[type, list[str]]) -> tuple[int, int]:
            names = item[1]
            return len(names), sum(p.numel() for p in modules[names[0]].parameters())

        chosen = [max(repeated.items(), key=weight)[1]]
    names = {n for group in chosen for n in group}
    outermost = {n for n in names if not any(n.startswith(o + ".") for o in names)}
    position = {n: i for i, n in enumerate(order)}
    return sorted(outermost, key=position.__getitem__)


def _observed(modules: dict[str, nn.Module], order: list[str], blocks: list[str]) -> list[str]:
    """The first module with weights of its own to run outside the blocks (the embedding or
    stem), then each block, then the root. Without blocks: the modules that run among the
    children of the model (through a wrapper of one child), then the root."""
    if blocks:
        inside = tuple(b + "." for b in blocks)
        stem = next(
            (
                n
                for n in order
                if n
                and not n.startswith(inside)
                and any(True for _ in modules[n].parameters(recurse=False))
            ),
            None,
        )
        return [*([stem] if stem is not None else []), *blocks, ""]
    prefix = ""
    children = [n for n in modules if n and "." not in n]
    # A wrapper of one child with all the weights: look one level down (repeatedly).
    while len(children) == 1:
        prefix = children[0] + "."
        children = [n for n in modules if n.startswith(prefix) and "." not in n[len(prefix) :]]
    ran = [n for n in order if n in set(children)]
    return [*ran, ""]


def _audited(model: nn.Module, modules: dict[str, nn.Module], order: list[str]) -> str:
    """The weight of the first matmul to run, by the name `named_parameters()` gives it (a tied
    weight is counted once, under its first name); the first parameter if no matmul ran."""
    names = {id(p): n for n, p in model.named_parameters()}
    for name in order:
        module = modules[name]
        weight = getattr(module, "weight", None)
        if is_matmul(module) and isinstance(weight, torch.Tensor) and id(weight) in names:
            return names[id(weight)]
    return next(iter(names.values()))


def head(model: nn.Module, order: list[str] | None = None) -> str | None:
    """The name of the Linear whose output is the logits: what the model says it is
    (transformers' `get_output_embeddings`, timm's `get_classifier`, on the model or inside a
    wrapper), else the last Linear or `Conv1D` to run (in registration order without `order`)."""
    by_id = {id(m): n for n, m in model.named_modules()}
    for module in model.modules():
        for ask in ("get_output_embeddings", "get_classifier"):
            getter = getattr(module, ask, None)
            if callable(getter):
                try:
                    found = getter()
                except Exception:  # a model's own getter that does not apply to it
                    continue
                if isinstance(found, nn.Module) and linear_shape(found) is not None:
                    return by_id.get(id(found))
    named = dict(model.named_modules())
    names = order if order is not None else list(named)
    candidates = [n for n in names if n in named and linear_shape(named[n]) is not None]
    return candidates[-1] if candidates else None


def fp8_excluded(model: nn.Module) -> dict[str, str]:
    """The Linears a float8 mode must leave in higher precision, each with why: the output
    head (as torchtitan's converter keeps a model's `output`) and any Linear whose weight is
    tied to another parameter (float8 would cast the shared tensor, an embedding table among
    them, for every use)."""
    aliases = tied(model)
    shapes = linears(model)
    out = {}
    name = head(model)
    if name is not None:
        out[name] = HEAD_KEPT
    for alias, first in aliases.items():
        module = alias.rpartition(".")[0]
        if module in shapes:
            why = f"its weight is tied to {first}"
            out[module] = f"{out[module]}; {why}" if module in out else why
        owner = first.rpartition(".")[0]
        if owner in shapes and owner not in out:
            out[owner] = f"its weight is tied to {alias}"
    return out


HEAD_KEPT = (
    "the output head stays in higher precision (torchtitan's float8 converter filters out a "
    "model's output Linear: its error goes straight into the logits and the loss)"
)
