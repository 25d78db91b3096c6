"""The Answer on dtypes, from the audit: which dtype each tensor of the scaled fp16 step has,
whether the question's two claims about them hold, and what GradScaler does with parameters cast
to a low-precision dtype (the audit's error paths)."""

from __future__ import annotations

import pandas as pd

from bench.numerics.report_format import chain_text
from bench.numerics.tables import (
    ACTIVATION,
    ACTIVATION_GRAD,
    LOG_SOFTMAX,
    LOSS,
    OPTIM_STATE,
    PARAM_GRAD,
    PRODUCED_GRAD,
)
from bench.recipes.catalog import fp16_pair

MOMENTS = ("exp_avg", "exp_avg_sq")
"""Adam's state tensors that hold gradient statistics (its `step` count is not one)."""


def _dtypes(audit: pd.DataFrame, mode: str, kind: str, states: tuple[str, ...] = ()) -> str:
    """The dtypes of `mode`'s audited tensors of one kind (of these Adam states, if given)."""
    rows = audit[(audit["mode"] == mode) & (audit["kind"] == kind)]
    if states:
        rows = rows[rows["state"].isin(states)]
    return " and ".join(sorted(set(rows["dtype"]))) or "not observed"


def observed_outputs(audit: pd.DataFrame, mode: str) -> str:
    """The observed activations as a sentence names them: each module, or the first and last of
    a long list."""
    rows = audit[(audit["mode"] == mode) & (audit["kind"] == ACTIVATION)]
    names = list(dict.fromkeys(rows["module"]))
    if len(names) <= 6:
        return ", ".join(names)
    return f"{len(names)} observed outputs, {names[0]} to {names[-1]}"


def dtype_sentences(
    audit: pd.DataFrame, chain: list[str], chained: str, torch_version: str
) -> list[str]:
    """The dtypes of fp16 autocast with GradScaler (the recipe the question is about), and
    whether the claims that its loss is float16 and that backward upcasts every gradient to
    float32 are borne out. `chain`: its autograd chain from the loss to parameter `chained`."""
    m, _ = fp16_pair()
    loss = _dtypes(audit, m, LOSS)
    log_softmax = _dtypes(audit, m, LOG_SOFTMAX)
    acts = _dtypes(audit, m, ACTIVATION)
    act_grads = _dtypes(audit, m, ACTIVATION_GRAD)
    produced = _dtypes(audit, m, PRODUCED_GRAD)
    param_grads = _dtypes(audit, m, PARAM_GRAD)
    adam = _dtypes(audit, m, OPTIM_STATE, MOMENTS)
    out = [
        f"**dtypes.** Under float16 autocast on torch {torch_version}, the loss is {loss} (the "
        f"log-softmax inside cross_entropy ran in {log_softmax}), the activations "
        f"({observed_outputs(audit, m)}) are {acts}, the gradients with respect to them are "
        f"{act_grads}, every weight and bias gradient leaves its matmul as {produced}, and "
        f"`param.grad` is {param_grads} (Adam's state: {adam}). The float32 `param.grad` is made "
        f"by the backward of the cast that fed the float32 parameter to the float16 matmul: the "
        f"autograd chain from the loss to {chained} is {chain_text(chain)}."
    ]
    claim_loss = loss == "float16"
    claim_grads = act_grads == "float32"
    out.append(
        f"The claim that the loss is float16 is {'borne out' if claim_loss else 'not borne out'} "
        f"(it is {loss}); the claim that backward upcasts every gradient to float32 is "
        f"{'borne out' if claim_grads else 'not borne out'}: only `param.grad` is "
        f"{param_grads}, while the activation gradients are {act_grads}."
    )
    return out


def error_sentences(errors: list[dict]) -> list[str]:
    """What one step with GradScaler on did to parameters cast to a low-precision dtype, per
    configuration the audit tried (`audit.json`'s `error_paths`)."""
    parts = []
    for e in errors:
        what = (
            f'raises {e["exception"]} in {e["raised_in"]} ("{e["message"]}")'
            if e["outcome"] == "raised"
            else "runs without an exception"
        )
        parts.append(f"{e['param_dtype']} parameters with {e['optimizer']} Adam {what}")
    return (
        [
            f"**GradScaler with low-precision parameters** (torch {errors[0]['torch']}): "
            + "; ".join(parts)
            + "."
        ]
        if errors
        else []
    )
