"""The dtype audit: every tensor's dtype in one train step, per mode, as observed on this torch;
and the GradScaler error paths users try, their outcome recorded as data."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import torch

from bench.faults import TRACEBACK_TEXT, fault
from bench.ground.catalog import fp16_pair
from bench.modes.mode import Mode, dtype_name
from bench.numerics.measure.grads import DtypeTrace, capture, chained
from bench.numerics.measure.tables import (
    ACTIVATION,
    ACTIVATION_GRAD,
    AUDIT_FAILED,
    FP8_GEMM,
    INPUT,
    LOG_SOFTMAX,
    LOSS,
    OPTIM_STATE,
    PARAM_GRAD,
    PRODUCED_GRAD,
    audit_tensor,
)
from bench.plan.plan import Plan
from bench.plan.step import build, train_step


def _first_output(ops: list[dict], op_prefix: str, phase: str) -> str:
    for op in ops:
        if op["phase"] == phase and op["op"].startswith(op_prefix):
            return op["outputs"].split(",")[0]
    return "not run"


def fp8_gemms(ops: list[dict]) -> list[tuple[dict[str, str], str]]:
    """One audit row per float8 GEMM (`aten._scaled_mm`): operands' and scales' dtypes, shapes."""
    out = []
    for i, op in enumerate(o for o in ops if o["op"].startswith("aten._scaled_mm")):
        dtypes = op["inputs"].split(",")
        shapes = op.get("input_shapes", "").split(",")
        operands = " × ".join(f"{d} {s}" for d, s in zip(dtypes[:2], shapes[:2], strict=False))
        scales = " and ".join(f"{d} {s}" for d, s in zip(dtypes[2:4], shapes[2:4], strict=False))
        tensor = {
            "kind": FP8_GEMM,
            "module": "",
            "state": "",
            "phase": op["phase"],
            "tensor": f"float8 GEMM {i + 1}: {operands}; scales {scales}",
        }
        out.append((tensor, op["outputs"].split(",")[0]))
    return out


def audit_mode(plan: Plan) -> tuple[list[dict], list[dict], list[str]]:
    """(tensor rows, op rows, autograd chain to the chained parameter) of the plan's mode."""
    s = build(plan)
    cap = capture(s)
    s.optimizer.zero_grad(set_to_none=True)
    trace = DtypeTrace()

    def next_phase(done: str, loss: torch.Tensor) -> None:
        trace.phase = NEXT_PHASE[done]

    with trace:
        train_step(dataclasses.replace(s, observe=next_phase))
    ops = [o for o in trace.ops if not o["op"].startswith(("profiler.", "aten.detach"))]
    params = dict(s.model.named_parameters())
    audited = chained(plan)
    state = s.optimizer.state[params[audited]]
    names = cap.observed
    logits = names[-1]
    rows = [(audit_tensor(INPUT), dtype_name(s.x.dtype))]
    rows += [
        (audit_tensor(ACTIVATION, n, logits=n == logits), dtype_name(cap.activations[n].dtype))
        for n in names
    ]
    rows += [
        (audit_tensor(LOG_SOFTMAX), _first_output(ops, "aten._log_softmax.", "forward")),
        (audit_tensor(LOSS), dtype_name(cap.loss.dtype)),
    ]
    rows += [
        (
            audit_tensor(ACTIVATION_GRAD, n, logits=n == logits),
            dtype_name(cap.activation_grads[n].dtype),
        )
        for n in reversed(names)
    ]
    rows += [
        (audit_tensor(PRODUCED_GRAD, n), dtype_name(g.dtype))
        for n, g in sorted(cap.produced_grads.items())
    ]
    rows += [
        (audit_tensor(PARAM_GRAD, n), dtype_name(g.dtype))
        for n, g in sorted(cap.param_grads.items())
    ]
    rows += [
        (audit_tensor(OPTIM_STATE, audited, k), dtype_name(v.dtype))
        for k, v in state.items()
        if torch.is_tensor(v)
    ]
    rows += fp8_gemms(ops)
    tensor_rows = [{"mode": plan.mode.name, **tensor, "dtype": d} for tensor, d in rows]
    op_rows = [{"mode": plan.mode.name, **o} for o in ops]
    return tensor_rows, op_rows, cap.chain


NEXT_PHASE = {"forward": "backward", "backward": "optimizer"}
"""The op trace's phase after each phase the step's observer sees end."""
RAISED_IN = {"forward": "scaler.scale(loss).backward()", "backward": "scaler.step(optimizer)"}
"""Where an error path raised, after each phase the observer saw end (before any: `forward`).
`scaler.update()` cannot raise once `scaler.step` recorded its inf checks: the rest is step's."""

ERROR_PATHS = [
    # (parameter dtype, autocast dtype, optimizer): GradScaler with low-precision parameters.
    (torch.float16, torch.float16, "foreach"),
    (torch.float16, torch.float16, "fused"),
    (torch.bfloat16, torch.bfloat16, "foreach"),
    (torch.bfloat16, torch.bfloat16, "fused"),
]


def error_paths(plan: Plan, modes: Mapping[str, Mode]) -> list[dict]:
    """One GradScaler step per `ERROR_PATHS` configuration: its outcome, and where it raised."""
    scaled, _ = fp16_pair()
    scaled_plan = plan.with_mode(modes[scaled])
    out = []
    for param_dtype, autocast_dtype, optimizer in ERROR_PATHS:
        # Not a mode of the benchmark: a mode users try, run through the same one step.
        mode = dataclasses.replace(
            modes[scaled],
            name=f"{dtype_name(param_dtype)}-params-scaled",
            autocast_dtype=autocast_dtype,
            param_dtype=param_dtype,
        )
        s = build(scaled_plan.with_mode(mode).with_case(optimizer=optimizer))
        row = {
            "param_dtype": dtype_name(param_dtype),
            "autocast_dtype": dtype_name(autocast_dtype),
            "optimizer": optimizer,
            "torch": torch.__version__,
            "device": plan.case.device,
        }
        where = "forward"

        def passed(done: str, loss: torch.Tensor) -> None:
            nonlocal where
            where = RAISED_IN[done]

        try:
            train_step(dataclasses.replace(s, observe=passed))
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


def run(plan: Plan, modes: Mapping[str, Mode]) -> tuple[list[dict], list[dict], dict]:
    """The whole audit: `run_modes` of `modes`, with the error paths in audit.json's content."""
    tensor_rows, op_rows, found = run_modes(plan, modes)
    found["error_paths"] = error_paths(plan, modes)
    if torch.cuda.is_available():
        torch.cuda.empty_cache()  # the audit's memory, before GPU 0 is shared with a worker
    return tensor_rows, op_rows, found


def run_modes(plan: Plan, modes: Mapping[str, Mode]) -> tuple[list[dict], list[dict], dict]:
    """The audit of `modes` alone: (tensor rows, op rows, {"chained", "chains": per mode,
    "unsupported": mode -> why it did not run here or how it failed, "tracebacks"})."""
    tensor_rows, op_rows, chains, skipped, tracebacks = [], [], {}, {}, {}
    for name, mode in modes.items():
        mode_plan = plan.with_mode(mode)
        reason = mode_plan.unsupported_reason
        if reason is not None:
            skipped[name] = reason
            continue
        try:
            t, o, chain = audit_mode(mode_plan)
        except Exception as exc:  # one mode's failure is data; the others are still audited
            failure = fault(exc, prefix=AUDIT_FAILED)
            skipped[name] = failure["error"]
            tracebacks[name] = failure[TRACEBACK_TEXT]
            continue
        tensor_rows += t
        op_rows += o
        chains[name] = chain
    found = {"chained": chained(plan), "chains": chains, "unsupported": skipped}
    found["tracebacks"] = tracebacks  # the failed modes' texts, which the study keeps in errors/
    return tensor_rows, op_rows, found
