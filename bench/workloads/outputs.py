"""What a model returns (a tensor, a tuple, a dict, a Hugging Face `ModelOutput`), reduced to
the tensor ampbench measures: the logits (`tensor`). The loss gets the output as returned."""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch.utils._pytree import tree_map

LOGITS = "logits"
"""The field of a Hugging Face output (and the key of a user's dict) that holds the logits."""


def tensor(output: object) -> torch.Tensor:
    """The tensor an output stands for: the output itself if it is a tensor; its `logits` where
    it has that field or key; else its first tensor, in order (a tuple's first element, a
    dict's first value), looked for depth-first. Raises `TypeError` naming the output's type
    when it holds no tensor."""
    found = _find(output)
    if found is None:
        raise TypeError(
            f"the model returned {type(output).__name__}, which holds no tensor for ampbench "
            "to measure (return a tensor, a tuple or dict of them, or an output with .logits)"
        )
    return found


def _find(output: object) -> torch.Tensor | None:
    if isinstance(output, torch.Tensor):
        return output
    # A ModelOutput is a Mapping whose keys are its fields that are not None.
    if isinstance(output, Mapping):
        if isinstance(output.get(LOGITS), torch.Tensor):
            return output[LOGITS]
        values = list(output.values())
    elif isinstance(getattr(output, LOGITS, None), torch.Tensor):
        return getattr(output, LOGITS)
    elif isinstance(output, (tuple, list)):
        values = list(output)
    else:
        return None
    for value in values:
        if (found := _find(value)) is not None:
            return found
    return None


def to_float(output: object) -> object:
    """The output with every floating tensor in it cast to float32, its type kept (a
    `ModelOutput` is a registered pytree node): a held-out loss of a bf16 model is then summed
    in float32, whatever the model returns."""
    return tree_map(
        lambda t: t.float() if isinstance(t, torch.Tensor) and t.is_floating_point() else t,
        output,
    )
