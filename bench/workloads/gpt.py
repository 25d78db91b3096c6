"""The GPT workload: a decoder-only transformer in plain PyTorch (GPT-2's block, an untied head,
no dropout in the timing presets), its named sizes, synthetic token batches and loss.
docs/own-model.md says why the head is untied (`gpt2-124m` has 163.1M parameters here)."""

from __future__ import annotations

import dataclasses
import math
from collections import OrderedDict
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from bench.data.sources import DataShape, generator
from bench.ground import cards
from bench.workloads import heads, tasks
from bench.workloads.base import Workload
from bench.workloads.zoo import common


@dataclass(frozen=True, kw_only=True)
class GPTSize:
    layers: int
    """Transformer blocks."""
    width: int
    """The residual stream's width (d_model); the MLP is 4× as wide."""
    heads: int
    """Attention heads; each is width / heads wide."""
    context: int
    """Tokens per sequence, and the number of learned positions."""
    vocab: int
    """Vocabulary size. 50304 is GPT-2's 50257 rounded up to a multiple of 64, as nanoGPT does:
    the head's matmul then tiles evenly, and float8 needs a multiple of 16 anyway."""
    dropout: float = 0.0
    """Dropout after the embeddings, in attention and on each residual branch (nanoGPT's places);
    0 for the timing presets, whose steps should do the same work every time."""
    bias: bool = True
    """Biases in the Linears and LayerNorms (GPT-2's); nanoGPT's Shakespeare model has none."""
    tied: bool = False
    """The head shares the token embedding's weight (GPT-2's and nanoGPT's arrangement)."""

    def __post_init__(self) -> None:
        for name in ("layers", "width", "heads", "context", "vocab"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"GPTSize.{name} must be a positive int, got {value!r}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"GPTSize.dropout must be in [0, 1), got {self.dropout!r}")
        if self.width % self.heads:
            raise ValueError(
                f"GPTSize.width {self.width} is not divisible by GPTSize.heads {self.heads}"
            )


PRESETS: dict[str, GPTSize] = {
    # GPT-2 small's shape, with an untied head (docs/own-model.md says why).
    "gpt2-124m": GPTSize(layers=12, width=768, heads=12, context=1024, vocab=50304),
    # GPT-3 XL's shape (Brown et al. 2020, table 2.1) at GPT-2's context and vocabulary.
    "gpt-1.3b": GPTSize(layers=24, width=2048, heads=16, context=1024, vocab=50304),
    # For the CPU and the tests: every dimension a multiple of 16, so the fp8 plan converts all
    # but the head, as it does for the large presets.
    "tiny": GPTSize(layers=2, width=64, heads=4, context=32, vocab=128),
    # nanoGPT's config/train_shakespeare_char.py: a character-level model of the bundled
    # Shakespeare text (its vocabulary, 65, is set from the data), tied, no biases, dropout 0.2.
    # Its training settings are the time-to-quality study's defaults (`bench.quality.config`).
    "shakespeare-char": GPTSize(
        layers=6, width=384, heads=6, context=256, vocab=65, dropout=0.2, bias=False, tied=True
    ),
    # The same shape at CPU size, for the tests and a smoke study.
    "shakespeare-tiny": GPTSize(
        layers=2, width=64, heads=4, context=64, vocab=65, dropout=0.0, bias=False, tied=True
    ),
}


def linear_shapes(size: GPTSize) -> dict[str, tuple[int, int]]:
    """Every Linear of the model by its module name, as (in_features, out_features), in forward
    order. The float8 plan and the FLOP formulas read it; the tests check it against the model."""
    d = size.width
    out: dict[str, tuple[int, int]] = {}
    for i in range(size.layers):
        out[f"blocks.{i}.attn.qkv"] = (d, 3 * d)
        out[f"blocks.{i}.attn.proj"] = (d, d)
        out[f"blocks.{i}.mlp.fc"] = (d, 4 * d)
        out[f"blocks.{i}.mlp.proj"] = (4 * d, d)
    out["head"] = (d, size.vocab)
    return out


def num_params(size: GPTSize, *, embeddings: bool = True) -> int:
    """Parameters of the model. Per block: 12·d² weights (qkv 3d², proj d², fc 4d², proj 4d²)
    and 13·d biases and LayerNorm parameters (qkv 3d, proj d, fc 4d, proj d, two LayerNorms 2d
    each); then the final LayerNorm (2d) and the head (vocab·d, no bias). `embeddings` adds the
    token (vocab·d) and position (context·d) tables, which do no matmul work."""
    d = size.width
    per_block = 12 * d * d + (13 * d if size.bias else 2 * d)
    n = size.layers * per_block + (2 if size.bias else 1) * d
    if not size.tied:
        n += size.vocab * d
    if embeddings:
        n += size.vocab * d + size.context * d
    return n


class Embeddings(nn.Module):
    """Token plus learned position embeddings: one module, so that its output, the residual
    stream's start, can be observed with a hook."""

    def __init__(self, size: GPTSize) -> None:
        super().__init__()
        self.tok = nn.Embedding(size.vocab, size.width)
        self.pos = nn.Embedding(size.context, size.width)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(idx.shape[1], device=idx.device)
        return self.tok(idx) + self.pos(positions)


class Attention(nn.Module):
    """Causal multi-head self-attention, through SDPA so that each device runs its fused
    kernel (FlashAttention on a recent GPU) and the score matrix is never materialised there."""

    def __init__(self, size: GPTSize) -> None:
        super().__init__()
        self.heads = size.heads
        self.qkv = nn.Linear(size.width, 3 * size.width, bias=size.bias)
        self.proj = nn.Linear(size.width, size.width, bias=size.bias)
        self.dropout = size.dropout
        self.resid_drop = nn.Dropout(size.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        # (b, s, 3d) -> three (b, heads, s, d/heads) tensors: SDPA wants the head dim second.
        q, k, v = (
            t.view(b, s, self.heads, d // self.heads).transpose(1, 2)
            for t in self.qkv(x).split(d, dim=2)
        )
        p = self.dropout if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
        return self.resid_drop(self.proj(y.transpose(1, 2).reshape(b, s, d)))


class FeedForward(nn.Module):
    """The block's MLP: width -> 4·width -> width, with GPT-2's tanh-approximated GELU."""

    def __init__(self, size: GPTSize) -> None:
        super().__init__()
        self.fc = nn.Linear(size.width, 4 * size.width, bias=size.bias)
        self.act = nn.GELU(approximate="tanh")
        self.proj = nn.Linear(4 * size.width, size.width, bias=size.bias)
        self.drop = nn.Dropout(size.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(self.proj(self.act(self.fc(x))))


class Block(nn.Module):
    """Pre-LayerNorm: each sub-layer reads a normalised copy of the residual stream and adds its
    output back, so the stream itself is never normalised (GPT-2's arrangement)."""

    def __init__(self, size: GPTSize) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(size.width, bias=size.bias)
        self.attn = Attention(size)
        self.ln2 = nn.LayerNorm(size.width, bias=size.bias)
        self.mlp = FeedForward(size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, size: GPTSize) -> None:
        super().__init__()
        self.size = size
        self.embed = Embeddings(size)
        self.drop = nn.Dropout(size.dropout)
        self.blocks = nn.ModuleList(Block(size) for _ in range(size.layers))
        self.norm = nn.LayerNorm(size.width, bias=size.bias)
        self.head = nn.Linear(size.width, size.vocab, bias=False)
        if size.tied:
            self.head.weight = self.embed.tok.weight

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """(batch, seq) token ids -> (batch, seq, vocab) logits."""
        if idx.shape[1] > self.size.context:
            raise ValueError(f"sequence length {idx.shape[1]} exceeds context {self.size.context}")
        x = self.drop(self.embed(idx))
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def build(
    size: GPTSize,
    device: torch.device | str,
    seed: int,
    *,
    scaled_residual: bool = True,
) -> GPT:
    """The model on `device`, initialised from `seed` in GPT-2's manner: every Linear weight and
    both embedding tables normal(0, 0.02), biases zero, LayerNorms (1, 0). With `scaled_residual`
    the two projections that write into the residual stream (attn.proj, mlp.proj) get std
    0.02/√(2·layers) instead, so that the stream's variance does not grow with depth (GPT-2's
    paper, §2.3; nanoGPT). Made on the meta device, then every parameter written once from a
    generator on `device` (a seed's weights differ between CUDA and the CPU); on the meta device
    the model has shapes only."""
    device = torch.device(device)
    with torch.device("meta"):
        model = GPT(size)
    if device.type == "meta":
        return model
    model.to_empty(device=device)
    if size.tied:  # to_empty gives each module a new tensor of its own: tie them again
        model.head.weight = model.embed.tok.weight
    gen = generator(device, seed)
    residual_std = 0.02 / math.sqrt(2 * size.layers) if scaled_residual else 0.02
    with torch.no_grad():
        for name, module in model.named_modules():
            if isinstance(module, nn.Linear):
                std = residual_std if name.endswith(("attn.proj", "mlp.proj")) else 0.02
                nn.init.normal_(module.weight, 0.0, std, generator=gen)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                nn.init.normal_(module.weight, 0.0, 0.02, generator=gen)
            elif isinstance(module, nn.LayerNorm):
                nn.init.ones_(module.weight)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
    return model


def make_batch(
    size: GPTSize, batch_size: int, device: torch.device | str, seed: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """A deterministic synthetic batch made on the device: (inputs, targets), each
    (batch_size, context) int64 uniform token ids, targets the inputs shifted by one. Nothing to
    learn (the loss stays near ln(vocab)): enough for timing, not for a learning curve. On the
    meta device the tokens have a shape but no values."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size!r}")
    device = torch.device(device)
    shape = (batch_size, size.context + 1)
    if device.type == "meta":  # meta has no generator, and nothing to draw
        tokens = torch.empty(shape, dtype=torch.long, device=device)
    else:
        gen = generator(device, seed)
        tokens = torch.randint(0, size.vocab, shape, generator=gen, device=device)
    # Contiguous copies: made once per case, they keep the loss's flatten a view, not a copy.
    return tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()


def loss(logits: torch.Tensor, targets: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """Next-token cross-entropy over every position of every sequence (`heads.loss`, the one
    cross-entropy). Under autocast `cross_entropy` runs in float32 (it is on autocast's float32
    list), so the log-softmax over the vocabulary never sums in a 16-bit dtype."""
    return heads.loss(logits, targets, reduction)


def blocks(model: GPT) -> list[nn.Module]:
    """The modules FSDP2 shards one by one (`fully_shard` per block, then the root), in order."""
    return list(model.blocks)


def observed(model: GPT) -> OrderedDict[str, nn.Module]:
    """Module name -> module whose output the numerics study observes, in forward order: the
    embedding sum, each block's attention and MLP outputs (before they join the residual
    stream), the final LayerNorm and the head (the logits)."""
    out: OrderedDict[str, nn.Module] = OrderedDict(embed=model.embed)
    for i, block in enumerate(model.blocks):
        out[f"blocks.{i}.attn"] = block.attn
        out[f"blocks.{i}.mlp"] = block.mlp
    out["norm"] = model.norm
    out["head"] = model.head
    return out


HEAD_KEPT = (
    "kept: the vocabulary head stays in higher precision (torchtitan's float8 converter "
    "filters out its `output` Linear and torchao advises the same: its error goes straight "
    "into the logits and the loss)"
)


def fp8_plan(size: GPTSize) -> dict[str, str]:
    """Linear name -> `converted` or `kept: <why>`, for a float8 training mode, in the manner
    of torchtitan's filter (`components/quantization/utils.py: module_filter_fn`): a Linear is
    converted unless it is the head or one of its dimensions is not a multiple of 16, which
    float8 tensor-core GEMMs require. torchao's size thresholds (below which float8 is slower
    than bf16) depend on the mode and are left to the mode's own filter."""
    out: dict[str, str] = {}
    for name, (k, n) in linear_shapes(size).items():
        if name == "head":
            out[name] = HEAD_KEPT
        elif k % 16 or n % 16:
            out[name] = f"kept: in {k} × out {n} not both divisible by 16 (float8 GEMMs need it)"
        else:
            out[name] = "converted"
    return out


def _on_data(size: GPTSize, data: DataShape) -> GPTSize:
    if data.task != "causal-lm":
        raise ValueError(f"gpt is a causal LM; the data is for {data.task}")
    return dataclasses.replace(size, vocab=data.vocab)


WORKLOAD = Workload(
    name=cards.GPT.name,
    description="a GPT-2-style decoder: pre-LayerNorm blocks, causal SDPA, GELU MLP, vocab head",
    presets=PRESETS,
    default_preset={"cuda": "gpt2-124m", "cpu": "tiny"},
    build=lambda size, device, seed: build(size, device, seed),
    make_batch=make_batch,
    loss=loss,
    linears=linear_shapes,
    fp8_excluded=lambda size: {
        name: why.removeprefix("kept: ")
        for name, why in fp8_plan(size).items()
        if why != "converted"
    },
    blocks=blocks,
    observed=observed,
    audited=lambda size: "blocks.0.attn.qkv.weight",
    named_sizes=lambda size: {"context": size.context, "width": size.width, "vocab": size.vocab},
    unit="tokens",
    per_sample=lambda size: size.context,
    fit_data=_on_data,
    task=lambda size, seed, noise, device: tasks.MarkovTask(
        vocab=size.vocab, context=size.context, seed=seed, noise=noise, device=device
    ),
    # Batch sizes in sequences of 1024 tokens: an MLP sample is one vector, a sequence a
    # thousand positions, each its own prediction. The held-out split is evaluated in chunks.
    # A zoo transformer's study, but trained at 1 and 2 sequences for 3000 steps more.
    numerics={
        "cuda": {**common.TEXT_NUMERICS["cuda"], "conv_batch_sizes": (1, 2), "long_steps": 3000},
    },
    **cards.GPT.flags(),
)
