"""The ResNet-50 workload (torchvision's `resnet50`, channels-last) on the CPU: its presets and
case ids, a seeded build and batch, the harness's own step, a run through the command line,
convolution FLOPs counted on the meta device, float8's `unsupported` row (no Linear to convert),
and the rows a machine without torchvision gives (its absence faked).

Tests that build the model need torchvision (the `[vision]` extra) and skip without it; the
others (batches, the float8 decision, the rows without torchvision) run everywhere."""

from __future__ import annotations

import math
import sys
import types

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from bench.cases.case import Case
from bench.cli import main
from bench.jobs import configs, maxbatch
from bench.jobs.suite import run_suite
from bench.measure import flops
from bench.measure.roofline import step_work
from bench.measure.runner import run_case
from bench.modes import fp8
from bench.plan.plan import resolve
from bench.plan.step import build, forward, train_step
from bench.store import results
from bench.store.run_env import Ceilings
from bench.workloads import resnet
from bench.workloads.base import Workload, from_model
from bench.workloads.registry import get, make_case
from bench.workloads.resnet import WORKLOAD as RESNET
from tests.conftest import tiny_case

TINY = resnet.PRESETS["tiny"]  # 64×64 images, 10 classes
FULL = resnet.PRESETS["resnet50"]  # 224×224 images, 1000 classes


@pytest.fixture
def torchvision():
    """torchvision, or a skip with the reason the workload's rows give. The workload's own check
    rather than `pytest.importorskip`: a torchvision built against another torch raises other
    errors than ModuleNotFoundError, and the harness counts it as missing too."""
    reason = resnet.unsupported_reason()
    if reason is not None:
        pytest.skip(f"resnet50 {reason}")
    import torchvision

    return torchvision


@pytest.fixture
def as_if_installed(monkeypatch):
    """torchvision as the workload's check finds it where it is installed, for tests that build
    no model (a stand-in module, so that they run on a machine without it too)."""
    monkeypatch.setitem(sys.modules, "torchvision.models", types.ModuleType("torchvision.models"))


@pytest.fixture
def no_torchvision(monkeypatch):
    """torchvision as on a machine without it: importing it (or its models) raises ImportError."""
    monkeypatch.setitem(sys.modules, "torchvision", None)
    monkeypatch.setitem(sys.modules, "torchvision.models", None)


def resnet_case(preset: str = "tiny", **axes: object) -> Case:
    fields = dict(mode="fp32", optimizer="fused", batch_size=2, device="cpu", warmup=1, steps=2)
    return make_case("resnet50", preset, **{**fields, **axes})


def test_presets_and_the_three_sizes_of_a_case_id():
    assert get("resnet50") is RESNET
    assert RESNET.default_preset == {"cuda": "resnet50", "cpu": "tiny"}
    # image side × the width of the pooled features fc reads × classes
    assert str(RESNET.sizes_at(FULL)) == "224x2048x1000"
    assert str(RESNET.sizes_at(TINY)) == "64x2048x10"
    assert RESNET.sizes_at(FULL).names == ("image", "features", "classes")
    assert resnet_case().case_id == "fp32/fused/b2/64x2048x10/cpu/s0/model=resnet50/preset=tiny"
    assert RESNET.unit == "samples" and RESNET.linears(FULL) == {"fc": (2048, 1000)}
    with pytest.raises(ValueError, match=r"ResNetSize\.image must be at least 32 .*got 16"):
        resnet.ResNetSize(image=16, classes=10)
    with pytest.raises(ValueError, match=r"ResNetSize\.classes must be a positive int, got 0"):
        resnet.ResNetSize(image=64, classes=0)


def test_batches_are_deterministic_channels_last_and_drawn_on_the_device():
    x, y = resnet.make_batch(TINY, 2, "cpu", seed=1)
    assert x.shape == (2, 3, 64, 64) and x.dtype == torch.float32
    assert x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous()
    assert y.shape == (2,) and y.dtype == torch.long and 0 <= int(y.min()) <= int(y.max()) < 10
    again = resnet.make_batch(TINY, 2, "cpu", seed=1)
    assert torch.equal(x, again[0]) and torch.equal(y, again[1])
    assert not torch.equal(x, resnet.make_batch(TINY, 2, "cpu", seed=2)[0])
    meta_x, meta_y = resnet.make_batch(FULL, 4, "meta", seed=0)  # shapes only, for counting
    assert meta_x.shape == (4, 3, 224, 224) and meta_x.is_meta and meta_y.dtype == torch.long
    assert meta_x.is_contiguous(memory_format=torch.channels_last)


def test_the_model_is_torchvisions_resnet50_seeded_and_channels_last(torchvision):
    model = resnet.build(TINY, "cpu", seed=7)
    assert isinstance(model, torchvision.models.ResNet)
    reference = torchvision.models.resnet50(weights=None, num_classes=10)
    shapes = [(n, p.shape) for n, p in model.named_parameters()]
    assert shapes == [(n, p.shape) for n, p in reference.named_parameters()]
    # Every 4-D weight (the convolutions') is NHWC; conv1's 7×7 kernel is not also NCHW.
    assert all(
        p.is_contiguous(memory_format=torch.channels_last)
        for p in model.parameters()
        if p.dim() == 4
    )
    assert not model.conv1.weight.is_contiguous()
    same = resnet.build(TINY, "cpu", seed=7)
    for (name, p), q in zip(model.state_dict().items(), same.state_dict().values(), strict=True):
        assert torch.equal(p, q), name
    assert not torch.equal(model.fc.weight, resnet.build(TINY, "cpu", seed=8).fc.weight)
    # torchvision's init: Kaiming-normal convolutions (fan_out, ReLU: std √(2/(64·3·3)) for
    # layer1's 3×3), BatchNorm (1, 0) with fresh running statistics, fc uniform ±1/√2048.
    assert model.layer1[0].conv2.weight.std().item() == pytest.approx(math.sqrt(2 / 576), rel=0.05)
    assert torch.equal(model.bn1.weight, torch.ones(64)) and not model.bn1.bias.any()
    assert not model.bn1.running_mean.any() and torch.equal(model.bn1.running_var, torch.ones(64))
    assert int(model.layer4[2].bn3.num_batches_tracked) == 0
    assert model.fc.weight.abs().max().item() <= 1 / math.sqrt(2048)


def test_linears_blocks_and_observed_modules(torchvision):
    model = resnet.build(FULL, "meta", seed=0)
    found = {n: (m.in_features, m.out_features) for n, m in model.named_modules()
             if isinstance(m, nn.Linear)}  # fmt: skip
    assert found == resnet.linear_shapes(FULL)
    blocks = RESNET.blocks(model)  # FSDP2's units: the bottlenecks of layer1..layer4 (3+4+6+3)
    assert len(blocks) == 16 and blocks[0] is model.layer1[0] and blocks[-1] is model.layer4[2]
    assert all(isinstance(b, torchvision.models.resnet.Bottleneck) for b in blocks)
    observed = RESNET.observed(model)
    assert list(observed) == ["maxpool", "layer1", "layer2", "layer3", "layer4", "fc"]
    named = dict(model.named_modules())
    assert all(named[name] is module for name, module in observed.items())


@pytest.mark.parametrize("mode", ["fp32", "bf16-amp", "bf16-pure"])
def test_one_step_of_the_harness_trains_in_channels_last(torchvision, mode):
    s = build(resolve(resnet_case(mode=mode)))
    assert s.x.is_contiguous(memory_format=torch.channels_last)
    # A cast keeps the layout: bf16-pure's bfloat16 weights are channels-last too.
    weight = s.model.layer2[0].conv2.weight
    assert weight.is_contiguous(memory_format=torch.channels_last) and not weight.is_contiguous()
    assert weight.dtype == (torch.bfloat16 if mode == "bf16-pure" else torch.float32)
    logits, loss = forward(s)
    assert logits.shape == (2, 10)
    # Under autocast the head's matmul gives bf16 logits and cross-entropy runs in float32.
    low = {"fp32": torch.float32, "bf16-amp": torch.bfloat16, "bf16-pure": torch.bfloat16}[mode]
    assert logits.dtype == low
    assert loss.dtype == (torch.bfloat16 if mode == "bf16-pure" else torch.float32)
    before = s.model.fc.weight.detach().clone()
    losses = [train_step(s) for _ in range(2)]
    assert all(torch.isfinite(loss) for loss in losses)
    assert not torch.equal(before, s.model.fc.weight)  # trained
    assert all(p.grad is None for p in s.model.parameters())  # and the gradients dropped


def test_convolutions_are_counted_on_meta_as_resnet50s_published_count(torchvision):
    work = step_work(RESNET, FULL, 1)
    # torchvision lists ResNet-50 at 4.09 GFLOPS, counting a multiply-add as one: 8.18e9 FLOPs
    # forward per 224×224 image, and 25,557,032 parameters.
    assert work.fwd_flop == pytest.approx(8.18e9, rel=1e-3)
    assert work.num_params == 25_557_032
    fwd, bwd = work.fwd_flop_by_module, work.bwd_flop_by_module
    # conv1: 7×7×3 per output, 64 channels, 112×112 positions; fc: 2048 → 1000.
    assert fwd["conv1"] == 2 * 112 * 112 * 64 * 7 * 7 * 3
    assert fwd["fc"] == 2 * 2048 * 1000
    assert all(name not in fwd for name in ("bn1", "relu", "maxpool"))  # not matmul work
    # Backward: each convolution's input and weight gradients, twice its forward, but conv1's
    # input gradient (the images do not require grad).
    assert work.bwd_flop == 2 * work.fwd_flop - fwd["conv1"]
    assert bwd["conv1"] == fwd["conv1"] and bwd["layer1.0.conv2"] == 2 * fwd["layer1.0.conv2"]
    # Every convolution and the Linear are cast by autocast; BatchNorm's 53,120 parameters
    # (a scale and a shift for each of 26,560 channels) are not.
    assert work.cast_params == work.num_params - 53_120


def test_a_tiny_case_is_an_ok_row_with_floors_from_counted_convolutions(torchvision, cpu_ceilings):
    case = resnet_case(mode="bf16-amp")
    row, samples = run_case(resolve(case), cpu_ceilings)
    assert row["status"] == "ok", row["error"]
    assert len(samples["total"]) == 2 and math.isfinite(row["final_loss"])
    assert "tokens_per_s" not in row and row["samples_per_s"] > 0
    # The meta count is the CPU count of the model the case trained.
    s = build(resolve(case))
    counted = flops.count(s.model, (s.x, s.y), lambda out, y: F.cross_entropy(out, y))
    assert row["fwd_gflop"] == pytest.approx(counted["fwd_flop"] / 1e9)
    assert row["bwd_gflop"] == pytest.approx(counted["bwd_flop"] / 1e9)
    # Convolutions run at the mode's own ceiling (bf16's 4 TFLOP/s here): only float8's
    # converted Linears would run at another.
    assert row["fwd_floor_ms"] == pytest.approx(row["fwd_gflop"] / 4.0)
    work = step_work(RESNET, TINY, 2)
    assert row["cast_gbytes"] == pytest.approx((work.cast_params * 12 + 2 * 3 * 64 * 64 * 6) / 1e9)


def test_a_run_through_the_command_line(torchvision, tmp_path):
    # Batch 1 too: the tiny preset's 64×64 images leave layer4 2×2 maps, so BatchNorm still
    # sees more than one value per channel (32×32 images would leave 1×1 and fail).
    out = tmp_path / "out"
    argv = ["run", "--device", "cpu", "--model", "resnet50", "--modes", "fp32"]
    argv += ["--optimizers", "fused", "--batch-sizes", "1,2", "--warmup", "1", "--steps", "2"]
    argv += ["--repeats", "1", "--no-overhead", "--results-dir", str(out)]
    assert main(argv) == 0
    (run,) = out.iterdir()
    rows = results.load(run)
    assert list(rows["status"]) == ["ok", "ok"] and sorted(rows["batch_size"]) == [1, 2]
    assert set(rows["model"]) == {"resnet50"} and set(rows["preset"]) == {"tiny"}
    assert (rows["fwd_gflop"] > 0).all() and (rows["samples_per_s"] > 0).all()
    report = (run / "report.md").read_text()  # the model, and what it is in words
    assert "Model: resnet50, preset tiny: torchvision's ResNet-50 on synthetic images" in report


# float8: torchao converts Linears only, and ResNet-50's one Linear is its head.


@pytest.mark.parametrize("scaling", fp8.GRANULARITIES)
def test_float8_has_no_linear_to_convert(as_if_installed, scaling):
    for size, classes in ((FULL, 1000), (TINY, 10)):
        plan = fp8.plan(RESNET, size, scaling)
        assert list(plan) == ["fc"] and plan["fc"].startswith(
            "kept: the classifier head stays in higher precision"
        )
        assert f"in 2048 × out {classes} not both divisible by 16" in plan["fc"]
        assert fp8.convertible(RESNET, size) == []
    reason = resolve(resnet_case("resnet50", mode=f"fp8-{scaling}")).unsupported_reason
    assert reason.startswith(f"fp8-{scaling}: float8 converts no Linear of resnet50: fc kept: ")
    assert reason.endswith("converts nn.Linear modules only, not convolutions)")


def test_float8_is_unsupported_even_on_a_float8_gpu_with_torchao(as_if_installed, monkeypatch):
    monkeypatch.setattr(fp8, "capability", lambda device: (9, 0))
    monkeypatch.setattr(fp8, "torchao_version", lambda: "0.18.0")
    # The fakes make a float8 GPU: the MLP's float8 cases run there.
    mlp = tiny_case(mode="fp8-rowwise", device="cuda", input=2048, hidden=4096)
    assert resolve(mlp).unsupported_reason is None
    # ResNet-50's would be a bf16 autocast step under a float8 name: a row that says why not.
    for mode in ("fp8-tensorwise", "fp8-rowwise"):
        reason = resolve(resnet_case("resnet50", mode=mode, device="cuda")).unsupported_reason
        assert reason is not None and "float8 converts no Linear of resnet50" in reason
    assert (
        resolve(resnet_case("resnet50", mode="bf16-amp", device="cuda")).unsupported_reason is None
    )


def convs_only() -> Workload:
    """A user's model without a Linear (`tests.test_workload_resnet:convs_only`)."""
    return from_model(
        "tests.test_workload_resnet:convs_only",
        lambda device: nn.Sequential(nn.Conv2d(3, 10, 8, device=device), nn.Flatten()),
        lambda n, device, gen: (
            torch.randn(n, 3, 8, 8, device=device, generator=gen),
            torch.randint(0, 10, (n,), device=device, generator=gen),
        ),
    )


def test_float8_on_a_model_without_a_linear_says_it_has_none():
    case = make_case(
        "tests.test_workload_resnet:convs_only", "default", mode="fp8-tensorwise",
        optimizer="fused", batch_size=2, device="cpu",
    )  # fmt: skip
    reason = resolve(case).unsupported_reason
    assert "float8 converts no Linear of tests.test_workload_resnet:convs_only: it has none" in (
        reason
    )


# Without torchvision: the workload is registered, and each of its cases is an `unsupported` row.

INSTALL_REASON = (
    "resnet50: needs torchvision (pip install -e '.[vision]'), which is not installed or does "
    "not import"
)


def test_without_torchvision_every_case_is_unsupported_with_how_to_install(no_torchvision):
    assert resnet.unsupported_reason() == resnet.INSTALL
    with pytest.raises(ImportError):
        resnet.build(TINY, "cpu", seed=0)
    # Its cases are still made (their sizes are the preset's, not the model's), and the
    # workload's reason comes first, before a mode's own (float8's here).
    for mode in ("fp32", "fp8-rowwise"):
        assert resolve(resnet_case(mode=mode)).unsupported_reason == INSTALL_REASON
    assert resolve(tiny_case()).unsupported_reason is None  # the other workloads are untouched


def test_without_torchvision_a_row_says_so_and_the_run_goes_on(no_torchvision, tmp_path):
    ceilings = Ceilings.from_record({"matmul_tflops_fp32": 1.0, "copy_gbps": 100.0})
    row, samples = run_case(resolve(resnet_case()), ceilings)
    assert row["status"] == "unsupported" and row["error"] == INSTALL_REASON and samples == {}
    assert "fwd_gflop" not in row  # nothing of the model was built, not even to count it
    assert (row["model"], row["preset"]) == ("resnet50", "tiny")
    run_suite(
        [resolve(resnet_case()), resolve(tiny_case())], tmp_path, ceilings, log=lambda msg: None
    )
    rows = results.read_rows(tmp_path / results.ROWS)
    assert [r["status"] for r in rows] == ["unsupported", "ok"]


def test_without_torchvision_the_largest_batch_search_reports_it(no_torchvision):
    cfg = configs.maxbatch_config(device="cpu", preset=None, model="resnet50", modes=("fp32",))
    assert cfg.preset == "tiny"
    tried = []

    def run(batch: int) -> dict:
        tried.append(batch)
        return maxbatch.trial(resolve(maxbatch.trial_case(cfg, "fp32", "eager", batch)))

    (row,) = maxbatch.search(run, start=cfg.start, limit=cfg.limit, resolution=cfg.resolution)
    assert tried == [cfg.start]  # nothing to search
    assert row["status"] == "unsupported" and row["error"] == INSTALL_REASON


def test_without_torchvision_a_new_run_is_refused_in_one_line(no_torchvision, tmp_path, capsys):
    # As for any grid of which no case can run here: no folder of `unsupported` rows.
    with pytest.raises(ValueError, match="no case of this grid can run here: resnet50: needs"):
        configs.run_config(device="cpu", preset=None, model="resnet50")
    out = tmp_path / "out"
    assert main(["run", "--device", "cpu", "--model", "resnet50", "--results-dir", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "pip install -e '.[vision]'" in err and len(err.splitlines()) == 1, err
    assert not out.exists()
