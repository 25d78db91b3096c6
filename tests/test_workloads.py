"""Measuring any workload: a GPT case and a user's own model through `run_case` on the CPU, with
floors from counted FLOPs, tokens/s, the float8 plan per workload, and the MLP's step unchanged."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from bench.cases.case import Case
from bench.measure.roofline import optimizer_bytes, step_work
from bench.measure.runner import run_case
from bench.modes import fp8
from bench.modes.mode import MODES
from bench.plan.plan import resolve
from bench.plan.step import build
from bench.store.run_env import Ceilings
from bench.workloads import gpt, mlp
from bench.workloads.base import Workload
from bench.workloads.gpt import WORKLOAD as GPT
from bench.workloads.mlp import WORKLOAD as MLP
from bench.workloads.registry import make_case
from tests.conftest import tiny_case

TINY = gpt.PRESETS["tiny"]  # 2 layers, width 64, 4 heads, context 32, vocabulary 128
CPU_MODES = ("fp32", "tf32", "fp16-amp", "fp16-amp-noscale", "bf16-amp", "bf16-pure")
"""The modes that run on the CPU (float8 needs a GPU, stochastic rounding torchao)."""
CEILING = {"fp32": 1.0, "tf32": 2.0, "fp16-amp": 4.0, "fp16-amp-noscale": 4.0}
"""Each mode's matmul ceiling in `cpu_ceilings` (bf16's is 4.0 too)."""


def gpt_case(**axes: object) -> Case:
    fields = dict(mode="fp32", optimizer="foreach", batch_size=2, device="cpu", warmup=1, steps=2)
    return make_case("gpt", "tiny", **{**fields, **axes})


def gpt_fwd_flop(size: gpt.GPTSize, batch_size: int) -> int:
    """2·(layers·12·d² + vocab·d)·tokens for the Linears, plus attention counted dense:
    4·layers·batch·context²·width (QKᵀ and the weights times V)."""
    d, s = size.width, size.context
    linears = size.layers * 12 * d * d + size.vocab * d
    return 2 * linears * batch_size * s + 4 * size.layers * batch_size * s * s * d


@pytest.mark.parametrize("mode", CPU_MODES)
def test_a_gpt_case_runs_in_every_cpu_mode_with_counted_floors(mode, cpu_ceilings):
    row, samples = run_case(resolve(gpt_case(mode=mode)), cpu_ceilings)
    assert row["status"] == "ok", row["error"]
    assert (row["model"], row["preset"]) == ("gpt", "tiny")
    assert len(samples["total"]) == 2 and math.isfinite(row["final_loss"])
    # Throughput in tokens: each of the 2 sequences holds 32 of them.
    assert row["tokens_per_s"] > 0
    assert row["tokens_per_s"] == pytest.approx(row["samples_per_s"] * 32)
    fwd = gpt_fwd_flop(TINY, 2)
    assert fwd == 14_680_064
    assert row["fwd_gflop"] == pytest.approx(fwd / 1e9, rel=1e-3)
    # Every matmul's backward is two of its size (the embeddings require grad, so even the
    # first block's input gradient is computed).
    assert row["bwd_gflop"] == pytest.approx(2 * fwd / 1e9, rel=1e-3)
    tflops = CEILING.get(mode, 4.0)  # one ceiling for every matmul: no float8
    assert row["fwd_floor_ms"] == pytest.approx(row["fwd_gflop"] / tflops)  # GFLOP / TFLOP/s
    # Adam over every parameter, embeddings and head included (the head is untied).
    scaled = MODES[mode].scale_loss
    param_bytes = 2 if mode == "bf16-pure" else 4
    opt = optimizer_bytes(gpt.num_params(TINY), scaled, param_bytes)
    assert row["step_gbytes"] == pytest.approx(opt / 1e9)
    assert row["step_floor_ms"] == pytest.approx(opt / 100e9 * 1e3)
    # Autocast casts the Linears' weights and biases (12·d² + 9·d per block, vocab·d for the
    # head), not the embeddings or the LayerNorms, and no token ids.
    autocast = MODES[mode].autocast_dtype is not None
    linear_params = TINY.layers * (12 * 64 * 64 + 9 * 64) + 128 * 64
    assert row["cast_gbytes"] == pytest.approx(linear_params * 12 / 1e9 if autocast else 0.0)


def test_token_ids_stay_integers_in_a_mode_that_casts_its_inputs():
    pure = MODES["bf16-pure"]
    ids = torch.zeros(2, 3, dtype=torch.long)
    assert pure.cast_input(ids).dtype == torch.long
    assert pure.cast_input(torch.zeros(2, 3)).dtype == torch.bfloat16
    s = build(resolve(gpt_case(mode="bf16-pure")))
    assert s.x.dtype == torch.long and {p.dtype for p in s.model.parameters()} == {torch.bfloat16}


def test_a_gpt_fp8_row_names_the_head_as_kept(cpu_ceilings):
    row, _ = run_case(resolve(gpt_case(mode="fp8-tensorwise")), cpu_ceilings)
    # The tiny GPT's Linears are all below torchao's sizes: unsupported on any machine, each
    # decision counted in the reason.
    assert row["status"] == "unsupported" and row["error"] == (
        "fp8-tensorwise: float8 converts no Linear of gpt: 8 kept: too small for tensorwise; "
        "1 kept: the vocabulary head stays in higher precision"
    )
    assert "head kept: the vocabulary head stays in higher precision" in row["fp8_linears"]
    assert row["fp8_linears"].startswith("blocks.0.attn.qkv kept: too small for tensorwise")


def test_the_fp8_plan_of_gpt2_124m_keeps_the_head_and_leaves_the_rest_to_torchao():
    size = gpt.PRESETS["gpt2-124m"]
    for scaling in fp8.GRANULARITIES:
        plan = fp8.plan(GPT, size, scaling)
        assert list(plan) == list(gpt.linear_shapes(size))
        assert plan["head"] == gpt.HEAD_KEPT
        for name, (k, n) in gpt.linear_shapes(size).items():
            if name != "head":
                assert plan[name] == fp8._decide(scaling, n=n, k=k), name
        assert MODES[f"fp8-{scaling}"].fp8_plan(GPT, size) == plan
    tensorwise = fp8.plan(GPT, size, "tensorwise")
    # d = 768: qkv (768 -> 2304) and the MLP's fc (768 -> 3072) are large enough; the two
    # projections back to 768 are not.
    assert tensorwise["blocks.0.attn.qkv"] == tensorwise["blocks.11.mlp.fc"] == "converted"
    assert tensorwise["blocks.0.attn.proj"] == (
        "kept: too small for tensorwise (in 768 ≤ 4096 and out 768 ≤ 1024)"
    )
    assert tensorwise["blocks.0.mlp.proj"].startswith("kept: too small for tensorwise (in 3072")
    assert "converted" not in fp8.plan(GPT, size, "rowwise").values()


def test_converted_linears_run_at_the_float8_ceiling_and_every_other_flop_at_bf16s(cpu_ceilings):
    # gpt2-124m at batch 1 (1024 tokens), counted on the meta device: tensorwise converts each
    # block's qkv and fc, 2·T·d·(3d + 4d) FLOPs forward per block; attention, the projections
    # and the head run at bf16's ceiling.
    size = gpt.PRESETS["gpt2-124m"]
    ceilings = Ceilings.from_record(
        {**cpu_ceilings.record(), "matmul_tflops_bf16": 1.0, "matmul_tflops_fp8-tensorwise": 2.0}
    )
    case = make_case(
        "gpt", "gpt2-124m", mode="fp8-tensorwise", optimizer="fused", batch_size=1, device="cpu"
    )
    row, _ = run_case(resolve(case), ceilings)
    assert row["status"] == "unsupported"  # on the CPU; its floors are counted all the same
    converted = size.layers * 2 * 1024 * 768 * 7 * 768
    total = gpt_fwd_flop(size, 1)
    assert row["fwd_gflop"] == pytest.approx(total / 1e9)
    assert row["fwd_floor_ms"] == pytest.approx((converted / 2 + (total - converted)) * 1e-9)
    work = step_work(GPT, size, 1)
    assert work is step_work(GPT, size, 1)  # counted once per model, size and batch size
    assert work.num_params == gpt.num_params(size)


def test_the_mlp_trains_the_weights_and_batch_it_always_did():
    case = tiny_case(seed=3)
    s = build(resolve(case))
    torch.manual_seed(3)
    before = mlp.MLP(mlp.PRESETS["tiny"])
    for a, b in zip(s.model.parameters(), before.parameters(), strict=True):
        assert torch.equal(a, b)
    x, y = mlp.make_batch(mlp.PRESETS["tiny"], 8, "cpu", 3)
    assert torch.equal(s.x, x) and torch.equal(s.y, y)
    # FSDP2's units are its three Linears, as before workloads.
    assert MLP.blocks(s.model) == [s.model.fc1, s.model.fc2, s.model.fc3]


def test_a_samples_workload_has_no_tokens_per_s(cpu_ceilings):
    row, _ = run_case(resolve(tiny_case()), cpu_ceilings)
    assert row["status"] == "ok" and "tokens_per_s" not in row


def test_a_gpt_case_compiles_on_the_cpu(cpu_ceilings):
    row, _ = run_case(resolve(gpt_case(variant="compile")), cpu_ceilings)
    assert row["status"] == "ok", row["error"]
    assert row["prepare_s"] > 0 and row["recompiled"] is False
    assert row["tokens_per_s"] == pytest.approx(row["samples_per_s"] * 32)


# A user's own model: a small convolutional classifier, given as `tests.test_workloads:toy`.


class ToyNet(nn.Module):
    def __init__(self, channels: int, device: str) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, channels, 3, padding=1, device=device)
        self.head = nn.Linear(channels * 8 * 8, 10, device=device)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(F.relu(self.conv(x)).flatten(1))


def _toy_batch(channels: int, batch: int, device: str, seed: int) -> tuple[torch.Tensor, ...]:
    # A generator on the device: none exists on meta, so the floor is counted on the CPU.
    gen = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(batch, 3, 8, 8, generator=gen, device=device)
    return x, torch.randint(0, 10, (batch,), generator=gen, device=device)


def toy() -> Workload:
    return Workload(
        name="tests.test_workloads:toy",
        description="Conv2d(3, c, 3) → ReLU → Linear(c·64, 10) on 8×8 images",
        presets={"small": 4},
        default_preset={"cuda": "small", "cpu": "small"},
        build=lambda c, device, seed: ToyNet(c, device),
        make_batch=_toy_batch,
        loss=lambda out, y, reduction: F.cross_entropy(out, y, reduction=reduction),
        linears=lambda c: {"head": (c * 64, 10)},
        fp8_excluded=lambda c: {},
        blocks=lambda model: [model.conv, model.head],
        observed=lambda model: {"conv": model.conv, "head": model.head},
        named_sizes=lambda c: {"channels": 3, "width": c, "classes": 10},
    )


@pytest.mark.parametrize("mode", ["fp32", "bf16-amp"])
def test_a_users_own_model_runs_through_run_case(mode, cpu_ceilings):
    case = make_case(
        "tests.test_workloads:toy", "small", mode=mode, optimizer="foreach", batch_size=4,
        device="cpu", warmup=1, steps=2,
    )  # fmt: skip
    row, samples = run_case(resolve(case), cpu_ceilings)
    assert row["status"] == "ok", row["error"]
    assert len(samples["total"]) == 2 and "tokens_per_s" not in row
    # By hand at batch 4: the conv 2·B·(8·8 positions)·4 out·(3·3·3) = 55296 forward, the
    # head 2·B·256·10 = 20480; backward the conv's weight gradient alone (the images do not
    # require grad), the head's input and weight gradients.
    assert row["fwd_gflop"] == pytest.approx((55296 + 20480) / 1e9)
    assert row["bwd_gflop"] == pytest.approx((55296 + 2 * 20480) / 1e9)
    params = (3 * 9 * 4 + 4) + (256 * 10 + 10)
    assert row["step_gbytes"] == pytest.approx(params * 28 / 1e9)
    casts = params * 12 + 4 * 3 * 8 * 8 * 6 if mode == "bf16-amp" else 0
    assert row["cast_gbytes"] == pytest.approx(casts / 1e9)
