"""The GPT workload and the FLOP counter, on the CPU (tiny preset) and the meta device (the large
presets: shapes only, no memory)."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from bench.measure import flops
from bench.workloads import gpt, mlp
from tests.mlp_by_hand import matmul_flops

TINY = gpt.PRESETS["tiny"]  # 2 layers, width 64, 4 heads, context 32, vocabulary 128


def test_shapes_and_loss_at_init_near_ln_vocab():
    model = gpt.build(TINY, "cpu", seed=0)
    x, y = gpt.make_batch(TINY, 3, "cpu", seed=0)
    assert x.shape == y.shape == (3, 32)
    assert x.dtype == y.dtype == torch.long
    logits = model(x)
    assert logits.shape == (3, 32, 128)
    # Logits of std ~0.02·√64 = 0.16 at init: the predicted distribution is nearly uniform.
    assert gpt.loss(logits, y).item() == pytest.approx(math.log(128), abs=0.05)


def test_targets_are_inputs_shifted_by_one():
    x, y = gpt.make_batch(TINY, 2, "cpu", seed=5)
    assert torch.equal(x[:, 1:], y[:, :-1])
    assert int(x.min()) >= 0 and int(x.max()) < TINY.vocab


def test_batches_and_init_are_deterministic_for_a_seed():
    a, b = gpt.make_batch(TINY, 2, "cpu", seed=1), gpt.make_batch(TINY, 2, "cpu", seed=1)
    assert all(torch.equal(s, t) for s, t in zip(a, b, strict=True))
    assert not torch.equal(a[0], gpt.make_batch(TINY, 2, "cpu", seed=2)[0])
    m1, m2 = gpt.build(TINY, "cpu", seed=7), gpt.build(TINY, "cpu", seed=7)
    for (n, p), q in zip(m1.named_parameters(), m2.parameters(), strict=True):
        assert torch.equal(p, q), n
    m3 = gpt.build(TINY, "cpu", seed=8)
    assert not torch.equal(m1.head.weight, m3.head.weight)


def test_init_is_gpt2s():
    model = gpt.build(TINY, "cpu", seed=0)
    # std 0.02 (plain) and 0.02/√(2·layers) = 0.01 (residual projections); 16k-64k draws each.
    assert model.blocks[0].mlp.fc.weight.std().item() == pytest.approx(0.02, rel=0.05)
    assert model.blocks[0].mlp.proj.weight.std().item() == pytest.approx(0.01, rel=0.05)
    assert model.blocks[1].attn.proj.weight.std().item() == pytest.approx(0.01, rel=0.1)
    assert torch.count_nonzero(model.blocks[0].attn.qkv.bias) == 0
    assert torch.equal(model.norm.weight, torch.ones(64))
    plain = gpt.build(TINY, "cpu", seed=0, scaled_residual=False)
    assert plain.blocks[0].mlp.proj.weight.std().item() == pytest.approx(0.02, rel=0.05)


def test_causal_a_later_token_changes_no_earlier_logit():
    model = gpt.build(TINY, "cpu", seed=0)
    x, _ = gpt.make_batch(TINY, 2, "cpu", seed=0)
    changed = x.clone()
    changed[:, 20] = (changed[:, 20] + 1) % TINY.vocab
    with torch.no_grad():
        before, after = model(x), model(changed)
    torch.testing.assert_close(after[:, :20], before[:, :20], rtol=0, atol=0)
    assert not torch.allclose(after[:, 20:], before[:, 20:])


def test_size_is_validated():
    with pytest.raises(ValueError, match=r"width 60 is not divisible by GPTSize\.heads 8"):
        gpt.GPTSize(layers=1, width=60, heads=8, context=8, vocab=16)
    with pytest.raises(ValueError, match=r"GPTSize\.layers must be a positive int, got 0"):
        gpt.GPTSize(layers=0, width=64, heads=4, context=8, vocab=16)
    with pytest.raises(TypeError):
        gpt.GPTSize(2, 64, 4, 32, 128)  # keyword-only: a swapped width and context cannot pass
    with pytest.raises(ValueError, match="sequence length 33 exceeds context 32"):
        gpt.build(TINY, "meta", 0)(torch.zeros(1, 33, dtype=torch.long, device="meta"))


def _count_params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def test_param_count_of_gpt2_124m_on_meta_is_the_hand_count():
    model = gpt.build(gpt.PRESETS["gpt2-124m"], "meta", seed=0)
    assert all(p.is_meta for p in model.parameters())
    d, layers, vocab, context = 768, 12, 50304, 1024
    # Per block 12·d² weights + 13·d biases and LayerNorm parameters; token and position tables;
    # the final LayerNorm; the untied head (vocab·d, no bias).
    hand = layers * (12 * d**2 + 13 * d) + vocab * d + context * d + 2 * d + vocab * d
    assert hand == 163_109_376  # 124,475,904 with the head tied, as GPT-2 does
    assert _count_params(model) == hand == gpt.num_params(gpt.PRESETS["gpt2-124m"])


def test_param_count_of_gpt_1_3b_on_meta():
    model = gpt.build(gpt.PRESETS["gpt-1.3b"], "meta", seed=0)
    d = 2048
    hand = 24 * (12 * d**2 + 13 * d) + 50304 * d + 1024 * d + 2 * d + 50304 * d
    assert _count_params(model) == hand == 1_416_744_960


def test_linear_shapes_name_every_linear_of_the_model():
    model = gpt.build(TINY, "meta", seed=0)
    found = {n: (m.in_features, m.out_features) for n, m in model.named_modules()
             if isinstance(m, nn.Linear)}  # fmt: skip
    assert found == gpt.linear_shapes(TINY)
    assert list(found) == list(gpt.linear_shapes(TINY))  # same (forward) order


def test_fp8_plan_keeps_the_head_and_says_why():
    plan = gpt.fp8_plan(gpt.PRESETS["gpt2-124m"])
    assert plan["head"].startswith("kept: the vocabulary head stays in higher precision")
    assert sum(v == "converted" for v in plan.values()) == 4 * 12
    assert set(plan) == set(gpt.linear_shapes(gpt.PRESETS["gpt2-124m"]))


def test_fp8_plan_keeps_a_linear_with_a_dimension_not_a_multiple_of_16():
    # Every block Linear has the width as one dimension, so a width of 40 (not a multiple of 16)
    # keeps them all; the head is kept for its own reason first.
    odd = gpt.GPTSize(layers=1, width=40, heads=4, context=8, vocab=50257)
    plan = gpt.fp8_plan(odd)
    assert plan["blocks.0.attn.qkv"] == (
        "kept: in 40 × out 120 not both divisible by 16 (float8 GEMMs need it)"
    )
    assert plan["blocks.0.mlp.proj"].startswith("kept: in 160 × out 40 not both divisible")
    assert plan["head"] == gpt.HEAD_KEPT
    assert "converted" not in plan.values()


def test_blocks_and_observed_modules():
    model = gpt.build(TINY, "meta", seed=0)
    assert gpt.blocks(model) == list(model.blocks)
    obs = gpt.observed(model)
    assert list(obs) == [
        "embed",
        "blocks.0.attn",
        "blocks.0.mlp",
        "blocks.1.attn",
        "blocks.1.mlp",
        "norm",
        "head",
    ]
    named = dict(model.named_modules())
    assert all(named[name] is module for name, module in obs.items())


def test_mlp_counted_flops_equal_the_roofline_formula():
    size, batch_size = mlp.PRESETS["tiny"], 8
    torch.manual_seed(0)
    model = mlp.MLP(size)
    batch = mlp.make_batch(size, batch_size, "cpu", 0)
    counted = flops.count(model, batch, nn.CrossEntropyLoss())
    hand = matmul_flops(size, batch_size)  # fwd 108544, bwd 184320 (fc1 has no input grad)
    assert counted["fwd_flop"] == pytest.approx(hand["fwd"], rel=1e-3)
    assert counted["bwd_flop"] == pytest.approx(hand["bwd"], rel=1e-3)
    assert counted["fwd_flop_by_module"] == {"fc1": 32768, "fc2": 65536, "fc3": 10240}
    assert all(p.grad is None for p in model.parameters())  # counting leaves .grad alone


def _gpt_forward_flops(size: gpt.GPTSize, batch_size: int) -> int:
    """2 · (matmul weights outside the embeddings) · tokens for the Linears (the embeddings are
    lookups, no matmul), plus attention counted dense: QKᵀ and the weights times V, each
    2·batch·context²·width per layer (the causal mask does not reduce the count)."""
    d, s, layers = size.width, size.context, size.layers
    tokens = batch_size * s
    linear_weights = layers * 12 * d * d + size.vocab * d
    return 2 * linear_weights * tokens + layers * 4 * batch_size * s * s * d


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_gpt_tiny_counted_flops_match_the_formula(device: str):
    batch_size = 2
    model = gpt.build(TINY, device, seed=0)
    counted = flops.count(model, gpt.make_batch(TINY, batch_size, device, 0), gpt.loss)
    expected = _gpt_forward_flops(TINY, batch_size)
    assert expected == 14_680_064
    # Exact in principle (the counter counts the same matmuls); 0.1% allows for a bias or a
    # scale op some future torch decides to count.
    assert counted["fwd_flop"] == pytest.approx(expected, rel=1e-3)
    # Every matmul's backward is two matmuls of its size (input and weight gradients; the
    # embeddings' output requires grad, so even the first qkv's input gradient is computed).
    assert counted["bwd_flop"] == pytest.approx(2 * expected, rel=1e-3)
    by_module = counted["fwd_flop_by_module"]
    assert by_module["blocks.0.attn"] == 4 * batch_size * 32 * 32 * 64  # the SDPA bmms alone
    assert by_module["head"] == 2 * batch_size * 32 * 64 * 128
    assert sum(by_module.values()) == counted["fwd_flop"]
    assert sum(counted["bwd_flop_by_module"].values()) == counted["bwd_flop"]


def test_gpt_1_3b_counts_on_meta_without_memory():
    size = gpt.PRESETS["gpt-1.3b"]
    model = gpt.build(size, "meta", seed=0)
    counted = flops.count(model, gpt.make_batch(size, 4, "meta", 0), gpt.loss)
    expected = _gpt_forward_flops(size, 4)
    assert counted["fwd_flop"] == pytest.approx(expected, rel=1e-3)
    assert counted["bwd_flop"] == pytest.approx(2 * expected, rel=1e-3)
    # The familiar 6·N·tokens rule (N without embeddings) within the attention's share.
    six_n = 6 * gpt.num_params(size, embeddings=False) * 4 * size.context
    assert counted["step_flop"] == pytest.approx(six_n, rel=0.1)
