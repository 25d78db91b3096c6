"""The "Answer" of the numerics report: every sentence computed from the measured tables.

Thresholds are stated here and nowhere else. A figure in a sentence is formatted from a table cell;
a conclusion ("needed", "not needed") follows from a threshold test on those figures.
"""

from __future__ import annotations

import pandas as pd

from bench.audit import ACTIVATION_LABELS

FLUSH_LIMIT = 0.01
"""fp16 without a scaler 'flushes' a tensor when more than 1% of its elements become zero that are
nonzero in the fp32 reference."""
LOSS_GAP = 0.10
"""A final training loss more than 10% above fp32's at the same batch size counts as worse."""

ACT_OUTPUTS = set(ACTIVATION_LABELS.values())


def _dtypes(audit: pd.DataFrame, mode: str, predicate) -> str:
    rows = audit[(audit["mode"] == mode) & audit["tensor"].map(predicate)]
    return " and ".join(sorted(set(rows["dtype"]))) or "not observed"


def _one(audit: pd.DataFrame, mode: str, tensor: str) -> str:
    rows = audit[(audit["mode"] == mode) & (audit["tensor"] == tensor)]
    return rows["dtype"].iloc[0] if len(rows) else "not observed"


def dtype_sentences(audit: pd.DataFrame, chain: list[str], torch_version: str) -> list[str]:
    m = "fp16-amp"
    loss = _one(audit, m, "loss")
    log_softmax = _one(audit, m, "log-softmax output")
    acts = _dtypes(audit, m, lambda t: t in ACT_OUTPUTS)
    act_grads = _dtypes(audit, m, lambda t: t.startswith("grad of "))
    produced = _dtypes(audit, m, lambda t: t.endswith("as its matmul produced it"))
    param_grads = _dtypes(audit, m, lambda t: t.endswith(".grad"))
    adam = _dtypes(audit, m, lambda t: t.startswith("Adam exp_avg"))
    out = [
        f"**dtypes.** Under float16 autocast on torch {torch_version}, the loss is {loss} (the "
        f"log-softmax inside cross_entropy ran in {log_softmax}), the activations (fc1, ReLU, "
        f"fc2, logits) are {acts}, the gradients with respect to them are "
        f"{act_grads}, every weight and bias gradient leaves its matmul as {produced}, and "
        f"`param.grad` is {param_grads} (Adam's state: {adam}). The float32 `param.grad` is made "
        f"by the backward of the cast that fed the float32 parameter to the float16 matmul: the "
        f"autograd chain from the loss to fc1.weight is {' → '.join(chain)}."
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


def underflow_sentences(census: pd.DataFrame, summary: pd.DataFrame) -> list[str]:
    noscale = census[census["mode"] == "fp16-amp-noscale"]
    scaled = census[census["mode"] == "fp16-amp"]
    flushing = []
    for bs, g in noscale.groupby("batch_size"):
        worst = g.loc[g["flushed"].idxmax()]
        if worst["flushed"] > FLUSH_LIMIT:
            flushing.append(
                f"{bs} ({worst['flushed']:.1%} of {worst['tensor']} at step {worst['step']})"
            )
    worst_scaled = scaled["flushed"].max() if len(scaled) else float("nan")
    sizes = ", ".join(str(b) for b in sorted(noscale["batch_size"].unique()))
    out = []
    if flushing:
        out.append(
            f"**Underflow.** Without a scaler, float16 flushes more than {FLUSH_LIMIT:.0%} of some "
            f"gradient tensor to zero at batch size {'; '.join(flushing)}, of the batch sizes "
            f"measured ({sizes}). With GradScaler the worst share flushed anywhere is "
            f"{worst_scaled:.2%}."
        )
    else:
        out.append(
            f"**Underflow.** Without a scaler, float16 flushes no more than {FLUSH_LIMIT:.0%} of "
            f"any gradient tensor at any batch size measured ({sizes}); the worst share is "
            f"{noscale['flushed'].max():.2%}. With GradScaler it is {worst_scaled:.2%}."
        )
    worse, compared = [], []
    means = summary.groupby(["batch_size", "mode"])["final_loss"].mean()
    for bs in sorted(summary["batch_size"].unique()):
        ref, ns = means.get((bs, "fp32")), means.get((bs, "fp16-amp-noscale"))
        if ref is None or ns is None:
            continue  # only batch sizes where both were trained are compared
        compared.append(str(bs))
        if ns != ns or ns > ref * (1 + LOSS_GAP):  # NaN (diverged) counts as worse
            worse.append(f"{bs} ({ns:.3g} against fp32's {ref:.3g})")
    if worse:
        out.append(
            f"**Convergence.** fp16 without a scaler ends with a training loss more than "
            f"{LOSS_GAP:.0%} above fp32's at batch size {'; '.join(worse)}."
        )
    elif compared:
        out.append(
            f"**Convergence.** fp16 without a scaler ends within {LOSS_GAP:.0%} of fp32's "
            f"training loss at every batch size where both were trained ({', '.join(compared)})."
        )
    else:
        out.append("**Convergence.** This run did not train both fp32 and fp16 without a scaler.")
    need = sorted({f.split(" ")[0] for f in flushing} | {w.split(" ")[0] for w in worse}, key=int)
    out.append(
        f"**So is GradScaler needed with float16?** On this model, yes at batch size "
        f"{', '.join(need)}: float32 `param.grad` does not help, because the gradients are "
        f"rounded to float16 before the cast makes them float32."
        if need
        else "**So is GradScaler needed with float16?** Not on this model at the batch sizes "
        "measured, by the two tests above."
    )
    return out


def cost_sentences(summary: pd.DataFrame, census: pd.DataFrame) -> list[str]:
    out = []
    ms = summary.groupby(["batch_size", "mode"])["step_ms"].mean()
    parts = []
    for bs in sorted(summary["batch_size"].unique()):
        a, b = ms.get((bs, "fp16-amp")), ms.get((bs, "fp16-amp-noscale"))
        if a is not None and b is not None:
            parts.append(f"{(a / b - 1):+.1%} at batch {bs} ({a:.3g} against {b:.3g} ms)")
    if parts:
        opt = summary["optimizer"].iloc[0] if "optimizer" in summary else "the chosen"
        out.append(
            f"**What GradScaler costs.** The measured step time with GradScaler, against "
            f"fp16 without it ({opt} Adam): {'; '.join(parts)}."
        )
    bf = census[census["mode"] == "bf16-amp"]["rel_err"].median()
    fp = census[census["mode"] == "fp16-amp"]["rel_err"].median()
    if bf == bf and fp == fp and fp > 0:
        out.append(
            f"**What bf16 gives up.** The median relative error of a gradient tensor against fp32 "
            f"is {bf:.2e} with bf16 and {fp:.2e} with scaled fp16, {bf / fp:.1f} times larger: "
            f"bf16 keeps float32's range, so it needs no scaler, but has 3 fewer mantissa bits."
        )
    return out


def error_sentences(errors: list[dict]) -> list[str]:
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


def answer(tables: dict, torch_version: str) -> list[str]:
    chain = tables["audit_json"]["chain_to_fc1_weight"].get("fp16-amp", [])
    return [
        *dtype_sentences(tables["audit"], chain, torch_version),
        *underflow_sentences(tables["census"], tables["summary"]),
        *cost_sentences(tables["summary"], tables["census"]),
        *error_sentences(tables["audit_json"]["error_paths"]),
    ]
