"""What one forward and backward pass produces, tensor by tensor (`capture`: activations, their
gradients, each parameter's gradient as its matmul produced it and as `param.grad`, the autograd
chain to `chained`), and every aten op's dtypes (`DtypeTrace`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field

import torch
from torch.autograd.graph import Node
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from bench.modes.mode import dtype_name
from bench.plan.plan import Plan
from bench.plan.step import TrainState, gradients
from bench.workloads import outputs


@dataclass
class Capture:
    loss: torch.Tensor
    activations: dict[str, torch.Tensor] = field(default_factory=dict)
    activation_grads: dict[str, torch.Tensor] = field(default_factory=dict)
    produced_grads: dict[str, torch.Tensor] = field(default_factory=dict)
    """Parameter name -> gradient as the matmul produced it, before any cast to the param dtype."""
    param_grads: dict[str, torch.Tensor] = field(default_factory=dict)
    chain: list[str] = field(default_factory=list)
    """The autograd nodes from the loss to the AccumulateGrad of `chained(s)`."""

    @property
    def observed(self) -> list[str]:
        """The observed modules' names, in forward order; the last one's output is the logits."""
        return list(self.activations)


def chained(plan: Plan) -> str:
    """The parameter whose chain and Adam state the audit records (`Workload.audited_of`)."""
    return plan.workload.audited_of(plan.size, plan.case.device)


def observed_modules(s: TrainState) -> dict[str, torch.nn.Module]:
    """The observed modules, in forward order, of the state's own (maybe compiled) model."""
    unwrapped = getattr(s.model, "_orig_mod", s.model)  # a compiled model's own module
    return s.plan.workload.observed_of(unwrapped, s.plan.size)


def _leaf_ptr(node: Node | None) -> int | None:
    """The storage address of the leaf an AccumulateGrad node feeds, or None for other nodes: by
    address, as torch 2.11 on CUDA handed back a `variable` that is not the Parameter object."""
    var = getattr(node, "variable", None) if node is not None else None
    return var.data_ptr() if isinstance(var, torch.Tensor) else None


def _edges(root: torch.autograd.graph.Node) -> Iterator[tuple[Node, Node]]:
    """Every (node, next node) edge of the autograd graph below `root`, each node expanded once.
    Visited nodes are kept, not their ids alone: a dropped node wrapper's id can be reused."""
    seen: dict[int, Node] = {id(root): root}
    stack = [root]
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            yield node, nxt
            if id(nxt) not in seen:
                seen[id(nxt)] = nxt
                stack.append(nxt)


def _chain_to(root: Node, target: torch.Tensor) -> list[str]:
    """Names of the autograd nodes on a path from `root` to the AccumulateGrad of `target`."""
    parent: dict[int, Node] = {}
    for node, nxt in _edges(root):
        parent.setdefault(id(nxt), node)
        if _leaf_ptr(nxt) == target.data_ptr():
            path = [nxt, node]
            while path[-1] is not root:
                path.append(parent[id(path[-1])])
            return [n.name() for n in reversed(path)]
    return []


def _hook_produced_grads(loss: torch.Tensor, s: TrainState, out: dict[str, torch.Tensor]) -> list:
    """Hook where each parameter's gradient leaves its matmul; one used in several places (a tied
    embedding) has no one such place, and is hooked at the leaf (AccumulateGrad's sum)."""
    names = {p.data_ptr(): n for n, p in s.model.named_parameters()}
    uses: dict[int, int] = {}
    casts: list[tuple[Node, int]] = []
    for node, nxt in _edges(loss.grad_fn):
        ptr = _leaf_ptr(nxt)
        if ptr in names:
            uses[ptr] = uses.get(ptr, 0) + 1
            if node.name() == "ToCopyBackward0":
                casts.append((node, ptr))
    handles, via_cast = [], set()
    for node, ptr in casts:
        if uses[ptr] > 1:
            continue
        name = names[ptr]
        via_cast.add(name)

        def on_cast(grad_inputs, grad_outputs, name=name):
            out[name] = grad_outputs[0]  # the low-precision gradient, before the cast

        handles.append(node.register_hook(on_cast))
    for name, p in s.model.named_parameters():
        if name not in via_cast:  # no cast, or several uses: the gradient reaching the leaf

            def on_leaf(grad, name=name):
                out[name] = grad

            handles.append(p.register_hook(on_leaf))
    return handles


def capture(s: TrainState) -> Capture:
    """The step's forward and backward (`gradients`) seen through hooks; `.grad` kept."""
    s.optimizer.zero_grad(set_to_none=True)
    acts: dict[str, torch.Tensor] = {}
    act_grads: dict[str, torch.Tensor] = {}
    produced: dict[str, torch.Tensor] = {}
    chain: list[str] = []

    def keep(name: str):
        def hook(module, inputs, output):
            # A block may return a tuple, the model a ModelOutput: its tensor is what flows on.
            out = outputs.tensor(output)
            if not out.requires_grad:  # no gradient flows through it (a frozen part): skipped
                return
            acts[name] = out
            out.register_hook(lambda g: act_grads.__setitem__(name, g))

        return hook

    handles = [m.register_forward_hook(keep(n)) for n, m in observed_modules(s).items()]

    def on_forward(phase: str, loss: torch.Tensor) -> None:
        if phase == "forward":  # the loss's graph, before backward runs through it
            handles.extend(_hook_produced_grads(loss, s, produced))
            chain.extend(_chain_to(loss.grad_fn, dict(s.model.named_parameters())[chained(s.plan)]))

    try:
        loss = gradients(dataclasses.replace(s, observe=on_forward))
    finally:
        for h in handles:
            h.remove()
    grads = {n: p.grad for n, p in s.model.named_parameters() if p.grad is not None}
    return Capture(loss.detach(), acts, act_grads, produced, grads, chain)


class DtypeTrace(TorchDispatchMode):
    """Records (phase, op, input and output dtypes, input shapes) of every aten op in it."""

    def __init__(self) -> None:
        super().__init__()
        self.phase = "forward"
        self.ops: list[dict[str, str]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        inputs = _tensors((args, kwargs))
        self.ops.append(
            {
                "phase": self.phase,
                "op": str(func),
                "inputs": ",".join(dtype_name(t.dtype) for t in inputs),
                "outputs": ",".join(dtype_name(t.dtype) for t in _tensors(out)),
                # Shapes say how a float8 GEMM is scaled: one scale (scalar) per tensor, or one
                # per row (Mx1) and column (1xN).
                "input_shapes": ",".join("x".join(map(str, t.shape)) or "scalar" for t in inputs),
            }
        )
        return out


def _tensors(tree: object) -> list[torch.Tensor]:
    return [t for t in tree_flatten(tree)[0] if isinstance(t, torch.Tensor)]
