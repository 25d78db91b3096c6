"""A Hugging Face model brought the way a training script has it: the model as it is (it returns
a `CausalLMOutputWithCrossAttentions`), a loss that reads `.logits`, GPT-2's head tied to its
token embedding, its projections transformers' `Conv1D`.

    ./run_bench.sh --model examples.hf_model:workload --batch-sizes 4
    ./run_bench.sh numerics --model examples.hf_model:workload

ampbench finds the rest in the module tree: the blocks FSDP2 shards (`transformer.h.*`), the
points the numerics study observes, the weight it audits, and the head float8 leaves alone.
For transformers' models by name, `--model hf:gpt2` does all of this for you (docs/own-model.md);
this file is for a model you build yourself. Needs transformers (`pip install -e '.[zoo]'`).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from bench.workloads.base import Workload, from_model

SEQ = 64
VOCAB = 512


def model(device: str) -> nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(
        vocab_size=VOCAB, n_positions=SEQ, n_embd=128, n_layer=4, n_head=4, use_cache=False
    )
    with torch.device(device):
        return GPT2LMHeadModel(config)


def batch(
    batch_size: int, device: str, generator: torch.Generator | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids and the next token of each, drawn from ampbench's seeded generator (None on the
    meta device, where nothing is drawn)."""
    if torch.device(device).type == "meta":
        ids = torch.empty(batch_size, SEQ + 1, dtype=torch.long, device=device)
    else:
        ids = torch.randint(0, VOCAB, (batch_size, SEQ + 1), generator=generator, device=device)
    return ids[:, :-1].contiguous(), ids[:, 1:].contiguous()


def loss(output, targets: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(output.logits.flatten(0, 1), targets.flatten())


def workload() -> Workload:
    return from_model("hf-gpt2-small", model, batch, loss, description="GPT-2 from its config")
