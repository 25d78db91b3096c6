import pytest
import torch

from bench.modes.mode import MODES, tf32_enabled, tf32_flags


def test_mode_table_matches_the_design():
    table = {
        name: (m.autocast_dtype, m.scale_loss, m.tf32, m.matmul_dtype) for name, m in MODES.items()
    }
    assert table == {
        "fp32": (None, False, False, "fp32"),
        "tf32": (None, False, True, "tf32"),
        "fp16-amp": (torch.float16, True, False, "fp16"),
        "fp16-amp-noscale": (torch.float16, False, False, "fp16"),
        "fp16-pure": (None, False, False, "fp16"),
        "bf16-amp": (torch.bfloat16, False, False, "bf16"),
        "bf16-pure": (None, False, False, "bf16"),
        "bf16-pure-sr": (None, False, False, "bf16"),
        "fp8-tensorwise": (torch.bfloat16, False, False, "fp8-tensorwise"),
        "fp8-rowwise": (torch.bfloat16, False, False, "fp8-rowwise"),
    }
    assert MODES["bf16-pure"].param_bytes == 2 and MODES["bf16-pure-sr"].stochastic_round


@pytest.mark.parametrize("enabled", [True, False])
def test_tf32_flags_are_in_force_and_restored(enabled):
    before = tf32_flags()
    with tf32_enabled(enabled):
        assert tf32_flags() == {"tf32_matmul": enabled, "tf32_cudnn": enabled}
    assert tf32_flags() == before


def test_tf32_flags_restored_after_an_exception():
    before = tf32_flags()
    with pytest.raises(RuntimeError), tf32_enabled(not before["tf32_matmul"]):
        raise RuntimeError("boom")
    assert tf32_flags() == before
