import pytest

from bench.model import PRESETS, ModelSize
from bench.roofline import floor_columns, matmul_flops, num_params, optimizer_bytes

TINY = PRESETS["tiny"]  # 32 -> 64 -> 64 -> 10


def test_flops_by_hand():
    # forward: 2*B*(32*64 + 64*64 + 64*10) at B=4 = 8 * 6784
    flops = matmul_flops(TINY, 4)
    assert flops["fwd"] == 54272
    # backward: input and weight gradients, minus fc1's input gradient (2*4*32*64 = 16384)
    assert flops["bwd"] == 2 * 54272 - 16384


def test_seed_preset_flops_scale_with_batch():
    seed = PRESETS["seed"]
    assert matmul_flops(seed, 2048)["fwd"] == 2 * matmul_flops(seed, 1024)["fwd"]
    assert matmul_flops(seed, 1)["fwd"] == 2 * (1024 * 16000 + 16000 * 16000 + 16000 * 2000)


def test_params_and_optimizer_bytes():
    size = ModelSize(input_size=2, hidden_size=3, num_classes=4)
    assert num_params(size) == (2 * 3 + 3) + (3 * 3 + 3) + (3 * 4 + 4)
    assert optimizer_bytes(size, scale_loss=False) == 37 * 28
    assert optimizer_bytes(size, scale_loss=True) == 37 * 32


def test_floor_is_work_over_ceilings():
    cols = floor_columns(TINY, 4, scale_loss=False, matmul_tflops=1.0, copy_gbps=1.0)
    assert cols["fwd_floor_ms"] == pytest.approx(54272 / 1e12 * 1e3)
    assert cols["step_floor_ms"] == pytest.approx(num_params(TINY) * 28 / 1e9 * 1e3)
    total = cols["fwd_floor_ms"] + cols["bwd_floor_ms"] + cols["step_floor_ms"]
    assert cols["floor_ms"] == pytest.approx(total)


def test_a_row_above_its_floor_is_explained():
    import pandas as pd

    from bench import report

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
