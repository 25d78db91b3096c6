import math

import pytest

from bench.measure.roofline import floor_columns, num_params, optimizer_bytes, step_work
from bench.workloads.mlp import PRESETS, ModelSize
from bench.workloads.mlp import WORKLOAD as MLP
from tests import mlp_by_hand

TINY = PRESETS["tiny"]  # 32 -> 64 -> 64 -> 10
WORK = step_work(MLP, TINY, 4)  # counted on the meta device


def test_flops_by_hand():
    # forward: 2*B*(32*64 + 64*64 + 64*10) at B=4 = 8 * 6784
    assert WORK.fwd_flop == mlp_by_hand.matmul_flops(TINY, 4)["fwd"] == 54272
    # backward: input and weight gradients, minus fc1's input gradient (2*4*32*64 = 16384)
    assert WORK.bwd_flop == mlp_by_hand.matmul_flops(TINY, 4)["bwd"] == 2 * 54272 - 16384
    by_hand = mlp_by_hand.matmul_flops_per_linear(TINY, 4)
    for phase, counted in (("fwd", WORK.fwd_flop_by_module), ("bwd", WORK.bwd_flop_by_module)):
        assert counted == {f"fc{n + 1}": f[phase] for n, f in enumerate(by_hand)}


def test_seed_preset_flops_scale_with_batch():
    seed = PRESETS["seed"]
    assert step_work(MLP, seed, 2048).fwd_flop == 2 * step_work(MLP, seed, 1024).fwd_flop
    assert step_work(MLP, seed, 1).fwd_flop == 2 * (1024 * 16000 + 16000 * 16000 + 16000 * 2000)
    assert step_work(MLP, seed, 1024).bwd_flop == mlp_by_hand.matmul_flops(seed, 1024)["bwd"]


def test_params_and_optimizer_bytes():
    size = ModelSize(input_size=2, hidden_size=3, num_classes=4)
    assert num_params(MLP, size) == (2 * 3 + 3) + (3 * 3 + 3) + (3 * 4 + 4)
    assert num_params(MLP, size) == mlp_by_hand.num_params(size)
    assert optimizer_bytes(num_params(MLP, size), scale_loss=False) == 37 * 28
    assert optimizer_bytes(num_params(MLP, size), scale_loss=True) == 37 * 32


def test_floor_is_work_over_ceilings():
    cols = floor_columns(WORK, scale_loss=False, matmul_tflops=1.0, copy_gbps=1.0)
    assert cols["fwd_floor_ms"] == pytest.approx(54272 / 1e12 * 1e3)
    assert cols["step_floor_ms"] == pytest.approx(num_params(MLP, TINY) * 28 / 1e9 * 1e3)
    total = cols["fwd_floor_ms"] + cols["bwd_floor_ms"] + cols["step_floor_ms"]
    assert cols["floor_ms"] == pytest.approx(total)


def test_a_row_above_its_floor_is_explained():
    import pandas as pd

    from bench.publish import report

    df = pd.DataFrame(
        {
            "status": ["ok", "ok", "error"],
            "pct_of_floor": [99.0, 101.2, 150.0],
            "case_id": list("abc"),
        }
    )
    (line, _) = report._above_floor(df)
    assert line.startswith("1 row(s) run faster than their floor (up to 101.2%, `b`)")
    assert report._above_floor(df.iloc[:1]) == []


def test_each_phase_floor_is_its_own_work_over_each_linears_ceiling():
    # Tiny at B=4, matmul FLOPs per Linear (fc1 32->64, fc2 64->64, fc3 64->10):
    #   forward  2*B*in*out:           16384, 32768,  5120  (54272)
    #   backward input + weight grads: 16384, 65536, 10240  (92160; fc1 has no input grad)
    # at 1, 2 and 4 TFLOP/s (fc2 and fc3 at ceilings of their own, as a float8 mode's
    # converted Linears are):
    #   forward  16384/1 + 32768/2 +  5120/4 = 34048 -> 34048e-12 s = 3.4048e-5 ms
    #   backward 16384/1 + 65536/2 + 10240/4 = 51712 ->               5.1712e-5 ms
    # Optimizer, with loss scaling: 6922 params * (7 Adam words + 1 inf check) * 4 bytes = 221504
    # bytes at 1 GB/s = 0.221504 ms; over 2 shards, half of it.
    own = {"fc2": 2.0, "fc3": 4.0}
    cols = floor_columns(WORK, scale_loss=True, matmul_tflops=1.0, linear_tflops=own, copy_gbps=1.0)
    assert cols["fwd_gflop"] == pytest.approx(54272e-9)
    assert cols["bwd_gflop"] == pytest.approx(92160e-9)
    assert cols["step_gbytes"] == pytest.approx(221504e-9)
    assert cols["fwd_floor_ms"] == pytest.approx(3.4048e-5)
    assert cols["bwd_floor_ms"] == pytest.approx(5.1712e-5)
    assert cols["step_floor_ms"] == pytest.approx(0.221504)
    assert cols["floor_ms"] == pytest.approx(0.221504 + 3.4048e-5 + 5.1712e-5)
    sharded = floor_columns(
        WORK, scale_loss=True, matmul_tflops=1.0, linear_tflops=own, copy_gbps=1.0, shards=2
    )
    assert sharded["step_floor_ms"] == pytest.approx(0.110752)
    assert sharded["bwd_floor_ms"] == pytest.approx(5.1712e-5)


def test_the_floor_at_one_ceiling_by_hand():
    # The same step at one ceiling, 1 TFLOP/s, without scaling (7 words: 193816 bytes):
    # 54272 + 92160 FLOPs take 1.46432e-4 ms, the optimizer 0.193816 ms.
    cols = floor_columns(WORK, scale_loss=False, matmul_tflops=1.0, copy_gbps=1.0)
    assert cols["bwd_floor_ms"] == pytest.approx(9.216e-5)
    assert cols["floor_ms"] == pytest.approx(0.193816 + 1.46432e-4)


def test_a_ceiling_not_measured_gives_no_floor_never_zero():
    # fc3's ceiling missing (NaN, as a CPU run's matmuls or a GPU without float8), then zero.
    for missing in (math.nan, 0.0):
        cols = floor_columns(
            WORK, scale_loss=False, matmul_tflops=1.0, linear_tflops={"fc3": missing}, copy_gbps=1.0
        )
        assert math.isnan(cols["fwd_floor_ms"]) and math.isnan(cols["floor_ms"])
        assert cols["step_floor_ms"] == pytest.approx(0.193816)  # the copy bandwidth bounds it
    assert math.isnan(
        floor_columns(WORK, scale_loss=False, matmul_tflops=1.0, copy_gbps=0.0)["step_floor_ms"]
    )


def test_the_cpu_measures_no_matmul_ceiling():
    from bench.measure import ceilings

    measured = ceilings.measure("cpu", matmul_n=16, copy_mib=1, warmup=0, steps=2)
    assert measured.matmul_tflops == {} and math.isnan(measured.matmul("fp32"))
    assert measured.copy_gbps > 0 and measured.ceiling_matmul_n == 16
    assert not any(key.startswith("matmul_tflops") for key in measured.record())


def test_a_float8_gpu_measures_each_float8_scalings_ceiling(monkeypatch):
    # Each float8 scaling of `bench.modes.fp8` gets its ceiling where the GPU runs float8 (the
    # matmuls themselves are stubbed: the CPU has none).
    from bench.measure import ceilings
    from bench.modes import fp8

    monkeypatch.setattr(fp8, "gpu_unsupported_reason", lambda device: None)
    monkeypatch.setattr(ceilings, "_fp8_tflops", lambda granularity, *_: 1.0)
    measured = ceilings.measure("cpu", matmul_n=16, copy_mib=1, warmup=0, steps=2)
    assert {k for k in measured.record() if k.startswith("matmul_tflops_fp8")} == {
        f"matmul_tflops_fp8-{g}" for g in fp8.GRANULARITIES
    }
    assert all(measured.matmul(f"fp8-{g}") == 1.0 for g in fp8.GRANULARITIES)
