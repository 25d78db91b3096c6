"""Report section 1, the dtype audit: dtypes per mode (a transformer's repeated blocks once, as
`blocks.*`), the autograd chain and the GradScaler error paths."""

from __future__ import annotations

import pandas as pd

from bench.faults import by_reason
from bench.numerics.analysis.failures import audit_failures
from bench.numerics.render.markdown import chain_text, fold_blocks, table_file
from bench.text.tables import markdown


def audit_section(t: dict) -> list[str]:
    """Every audited tensor's dtype per mode, the chains, the error paths, the failures."""
    audit, found = t["audit"], t["audit_json"]
    failed = audit_failures(found)
    out = ["## 1. dtype audit", ""]
    if audit.empty:
        out += [
            f"Not measured: the audit failed for every mode it ran ({by_reason(failed)})."
            if failed
            else "Not measured: the audit ran no mode here.",
            "",
        ]
    else:
        out += _dtype_table(
            audit, found["chains"], found.get("chained", ""), table_file(t, "audit_ops")
        )
        if failed:
            out += [f"The audit failed for {by_reason(failed)}.", ""]
    errors = pd.DataFrame(found.get("error_paths", []))
    if errors.empty:
        return out
    columns = ["param_dtype", "optimizer", "outcome", "exception", "message", "raised_in", "torch"]
    return [
        *out,
        "Parameters cast to a low-precision dtype, with GradScaler on (expected outcomes, "
        "recorded as observed):",
        "",
        markdown(errors[columns]),
        "",
    ]


def _dtype_table(
    audit: pd.DataFrame, chains: dict[str, list[str]], chained: str, ops_file: str
) -> list[str]:
    """The dtype of every audited tensor per mode, and each audited mode's autograd chain."""
    order = list(dict.fromkeys(audit["tensor"]))
    pivot = audit.pivot(index="tensor", columns="mode", values="dtype").reindex(order)
    pivot = fold_blocks(pivot[list(dict.fromkeys(audit["mode"]))].reset_index(), "tensor")
    out = [
        "Every tensor of one forward and backward pass and the optimizer step, as the step "
        "produced it (hooks on the activations and on the cast nodes of the parameters; the full "
        f"op trace, aten op by aten op, is in `{ops_file}`).",
        "",
        markdown(pivot),
        "",
    ]
    if chains:
        out += [
            f"Autograd chain from the loss back to `{chained}`:",
            "",
            *[f"- `{mode}`: {chain_text(chain)}" for mode, chain in chains.items()],
            "",
        ]
    return out
