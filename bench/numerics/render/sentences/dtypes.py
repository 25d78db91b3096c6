"""The Answer on dtypes, from the audit: the scaled fp16 step's, the two claims, the error paths."""

from __future__ import annotations

import pandas as pd

from bench.ground.catalog import fp16_pair
from bench.numerics.measure.tables import (
    ACTIVATION,
    ACTIVATION_GRAD,
    AUDIT_FAILED,
    LOG_SOFTMAX,
    LOSS,
    OPTIM_STATE,
    PARAM_GRAD,
    PRODUCED_GRAD,
)
from bench.numerics.render.markdown import chain_text

MOMENTS = ("exp_avg", "exp_avg_sq")
"""Adam's state tensors that hold gradient statistics (its `step` count is not one)."""


NOT_OBSERVED = ("not observed", "not run")
"""What `dtypes_of` gives for a kind of tensor with no audit row, and what the audit records for an
op the step never ran (a loss without a log-softmax): a clause about either is left out."""


def dtypes_of(audit: pd.DataFrame, mode: str, kind: str, states: tuple[str, ...] = ()) -> str:
    """The dtypes of `mode`'s audited tensors of one kind (of these Adam states, if given)."""
    rows = audit[(audit["mode"] == mode) & (audit["kind"] == kind)]
    if states:
        rows = rows[rows["state"].isin(states)]
    return " and ".join(sorted(set(rows["dtype"]))) or NOT_OBSERVED[0]


def observed_outputs(audit: pd.DataFrame, mode: str) -> str:
    """The observed activations: each module, or the first and last of a long list."""
    rows = audit[(audit["mode"] == mode) & (audit["kind"] == ACTIVATION)]
    names = list(dict.fromkeys(rows["module"]))
    if len(names) <= 6:
        return ", ".join(names)
    return f"{len(names)} observed outputs, {names[0]} to {names[-1]}"


def _seen(dtypes: str) -> bool:
    return dtypes not in NOT_OBSERVED


def _listed(clauses: list[str]) -> str:
    """`a, b, and c` (`a and b`, `a`)."""
    if len(clauses) <= 2:
        return " and ".join(clauses)
    return ", ".join(clauses[:-1]) + ", and " + clauses[-1]


def dtype_sentences(
    audit: pd.DataFrame,
    chain: list[str],
    chained: str,
    torch_version: str,
    why: str | None = None,
) -> list[str]:
    """The dtypes of fp16 autocast with GradScaler and whether the question's two claims hold;
    one line with `why` where it was not audited. `chain`: its chain to `chained`."""
    m, _ = fp16_pair()
    if audit[audit["mode"] == m].empty:
        if why and why.startswith(AUDIT_FAILED):
            what = f"the dtype audit of {m} failed ({why.removeprefix(AUDIT_FAILED)})"
        else:
            what = f"the dtype audit could not run {m} here ({why})" if why else f"no audit of {m}"
        return [f"**dtypes.** Not observed: {what}."]
    loss = dtypes_of(audit, m, LOSS)
    log_softmax = dtypes_of(audit, m, LOG_SOFTMAX)
    acts = dtypes_of(audit, m, ACTIVATION)
    act_grads = dtypes_of(audit, m, ACTIVATION_GRAD)
    produced = dtypes_of(audit, m, PRODUCED_GRAD)
    param_grads = dtypes_of(audit, m, PARAM_GRAD)
    adam = dtypes_of(audit, m, OPTIM_STATE, MOMENTS)
    clauses = []
    if _seen(loss):
        ran = f" (the log-softmax inside cross_entropy ran in {log_softmax})"
        clauses.append(f"the loss is {loss}" + (ran if _seen(log_softmax) else ""))
    if _seen(acts):
        clauses.append(f"the activations ({observed_outputs(audit, m)}) are {acts}")
    if _seen(act_grads):
        them = "them" if _seen(acts) else "the activations"
        clauses.append(f"the gradients with respect to {them} are {act_grads}")
    if _seen(produced):
        clauses.append(f"every weight and bias gradient leaves its matmul as {produced}")
    if _seen(param_grads):
        state = f" (Adam's state: {adam})" if _seen(adam) else ""
        clauses.append(f"`param.grad` is {param_grads}{state}")
    made = (
        " The float32 `param.grad` is made by the backward of the cast that fed the float32 "
        "parameter to the float16 matmul: the autograd chain from the loss to "
        f"{chained} is {chain_text(chain)}."
        if chain
        else ""
    )
    out = [
        f"**dtypes.** Under float16 autocast on torch {torch_version}, {_listed(clauses)}.{made}"
        if clauses
        else f"**dtypes.** Not observed: the dtype audit of {m} recorded none of its tensors."
    ]
    claims = []
    if _seen(loss):
        claim_loss = loss == "float16"
        claims.append(
            f"the claim that the loss is float16 is "
            f"{'borne out' if claim_loss else 'not borne out'} (it is {loss})"
        )
    if _seen(act_grads) and _seen(param_grads):
        claim_grads = act_grads == "float32"
        claims.append(
            f"the claim that backward upcasts every gradient to float32 is "
            f"{'borne out' if claim_grads else 'not borne out'}: only `param.grad` is "
            f"{param_grads}, while the activation gradients are {act_grads}"
        )
    if claims:
        text = "; ".join(claims)
        out.append(f"{text[0].upper()}{text[1:]}.")
    return out


def error_sentences(errors: list[dict]) -> list[str]:
    """What a GradScaler step did to low-precision parameters (the audit's error paths)."""
    if not errors:
        return []
    parts = []
    for e in errors:
        what = (
            f'raises {e["exception"]} in {e["raised_in"]} ("{e["message"]}")'
            if e["outcome"] == "raised"
            else "runs without an exception"
        )
        parts.append(f"{e['param_dtype']} parameters with {e['optimizer']} Adam {what}")
    lead = f"**GradScaler with low-precision parameters** (torch {errors[0]['torch']})"
    return [f"{lead}: {'; '.join(parts)}."]
