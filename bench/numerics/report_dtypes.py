"""Section 1 of the numerics report, the dtype audit: every tensor's dtype per mode, the autograd
chain to the first Linear's weight, and what GradScaler did with parameters cast to a low-precision
dtype. A transformer's blocks repeat: rows that differ only in a block's index and have the same
dtypes in every mode are shown once, as `blocks.*`."""

from __future__ import annotations

import pandas as pd

from bench.numerics.report_format import chain_text, fold_blocks, markdown, table_file


def audit_section(t: dict) -> list[str]:
    """Every audited tensor's dtype per mode, each mode's autograd chain to the chained
    parameter, and the GradScaler error paths."""
    audit = t["audit"]
    order = list(dict.fromkeys(audit["tensor"]))
    pivot = audit.pivot(index="tensor", columns="mode", values="dtype").reindex(order)
    pivot = fold_blocks(pivot[list(dict.fromkeys(audit["mode"]))].reset_index(), "tensor")
    chains = t["audit_json"]["chains"]
    chained = t["audit_json"].get("chained", "")
    errors = pd.DataFrame(t["audit_json"]["error_paths"])
    return [
        "## 1. dtype audit",
        "",
        "Every tensor of one forward and backward pass and the optimizer step, as the step "
        "produced it (hooks on the activations and on the cast nodes of the parameters; the full "
        f"op trace, aten op by aten op, is in `{table_file(t, 'audit_ops')}`).",
        "",
        markdown(pivot),
        "",
        f"Autograd chain from the loss back to `{chained}`:",
        "",
        *[f"- `{mode}`: {chain_text(chain)}" for mode, chain in chains.items()],
        "",
        "Parameters cast to a low-precision dtype, with GradScaler on (expected outcomes, "
        "recorded as observed):",
        "",
        markdown(
            errors[
                [
                    "param_dtype",
                    "optimizer",
                    "outcome",
                    "exception",
                    "message",
                    "raised_in",
                    "torch",
                ]
            ]
        ),
        "",
    ]
