"""The dtype audit: which dtype every tensor of one train step has, per mode, as observed.

Nothing here is asserted from documentation: the tables are what the step produced on the torch
version it ran on. Two configurations that users try and that GradScaler refuses are run too, and
their outcome (the exception and its message, or none) is recorded as data.
"""

from __future__ import annotations

import dataclasses

import torch

from bench.case import Case
from bench.grads import ACTIVATIONS, DtypeTrace, capture
from bench.modes import MODES, tf32_enabled
from bench.step import backward, build, forward, optimizer_step

ACTIVATION_LABELS = {
    "fc1": "fc1 output",
    "relu": "ReLU output",
    "fc2": "fc2 output",
    "fc3": "logits (fc3 output)",
}


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _first_output(ops: list[dict], op_prefix: str, phase: str) -> str:
    for op in ops:
        if op["phase"] == phase and op["op"].startswith(op_prefix):
            return op["outputs"].split(",")[0]
    return "not run"


def audit_mode(case: Case) -> tuple[list[dict], list[dict], list[str]]:
    """(tensor rows, op rows, autograd chain to fc1.weight) for one mode."""
    with tf32_enabled(MODES[case.mode].tf32):
        s = build(case)
        cap = capture(s)
        s.optimizer.zero_grad(set_to_none=True)
        with DtypeTrace() as trace:
            _, loss = forward(s)
            trace.phase = "backward"
            backward(s, loss)
            trace.phase = "optimizer"
            optimizer_step(s)
    ops = [o for o in trace.ops if not o["op"].startswith(("profiler.", "aten.detach"))]
    state = next(iter(s.optimizer.state.values()))
    rows = [("input x", _name(s.x.dtype))]
    rows += [(ACTIVATION_LABELS[n], _name(cap.activations[n].dtype)) for n in ACTIVATIONS]
    rows += [
        ("log-softmax output", _first_output(ops, "aten._log_softmax.", "forward")),
        ("loss", _name(cap.loss.dtype)),
    ]
    rows += [
        (f"grad of {ACTIVATION_LABELS[n]}", _name(cap.activation_grads[n].dtype))
        for n in reversed(ACTIVATIONS)
    ]
    rows += [
        (f"{n} grad as its matmul produced it", _name(g.dtype))
        for n, g in sorted(cap.produced_grads.items())
    ]
    rows += [(f"{n}.grad", _name(g.dtype)) for n, g in sorted(cap.param_grads.items())]
    rows += [(f"Adam {k}", _name(v.dtype)) for k, v in state.items() if torch.is_tensor(v)]
    tensor_rows = [{"mode": case.mode, "tensor": t, "dtype": d} for t, d in rows]
    op_rows = [{"mode": case.mode, **o} for o in ops]
    return tensor_rows, op_rows, cap.chain_to_fc1_weight


ERROR_PATHS = [
    # (parameter dtype, autocast dtype, optimizer): GradScaler with low-precision parameters.
    (torch.float16, torch.float16, "foreach"),
    (torch.float16, torch.float16, "fused"),
    (torch.bfloat16, torch.bfloat16, "foreach"),
    (torch.bfloat16, torch.bfloat16, "fused"),
]


def error_paths(case: Case) -> list[dict]:
    """Cast the parameters to a low-precision dtype, keep GradScaler on, take one step."""
    out = []
    for param_dtype, autocast_dtype, optimizer in ERROR_PATHS:
        c = dataclasses.replace(case, mode="fp16-amp", optimizer=optimizer)
        s = build(c)
        s.model.to(param_dtype)
        # Adam was built on the float32 parameters; .to() converts them in place (same objects).
        s = dataclasses.replace(s, mode=dataclasses.replace(s.mode, autocast_dtype=autocast_dtype))
        row = {
            "param_dtype": _name(param_dtype),
            "autocast_dtype": _name(autocast_dtype),
            "optimizer": optimizer,
            "torch": torch.__version__,
            "device": case.device,
        }
        where = "forward"
        try:
            _, loss = forward(s)
            where = "scaler.scale(loss).backward()"
            backward(s, loss)
            where = "scaler.step(optimizer)"
            s.scaler.step(s.optimizer)
            where = "scaler.update()"
            s.scaler.update()
            row.update(outcome="no exception", exception="", message="", raised_in="")
        except Exception as exc:  # the outcome is the data
            row.update(
                outcome="raised",
                exception=type(exc).__name__,
                message=(str(exc).splitlines() or [""])[0],
                raised_in=where,
            )
        out.append(row)
    return out
