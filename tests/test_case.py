import pytest

from bench.cases.case import grid
from bench.cases.sizes import Sizes
from bench.workloads.mlp import PRESETS
from tests.conftest import tiny_case


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("mode", "fp8"),
        ("optimizer", "sgd"),
        ("device", "tpu"),
        ("batch_size", 0),
        ("batch_size", -4),
        ("steps", 0),
        ("warmup", -1),
        ("hidden", 2.5),
    ],
)
def test_bad_fields_name_the_value(field, value):
    with pytest.raises(ValueError, match=repr(value).replace(".", r"\.")):
        tiny_case(**{field: value})


def test_case_id_names_every_axis():
    case = tiny_case(mode="bf16-amp", optimizer="fused", batch_size=16, seed=3)
    assert case.case_id == "bf16-amp/fused/b16/32x64x10/cpu/s3"


def test_grid_is_the_full_product_batch_outermost():
    cases = grid(
        modes=["fp32", "bf16-amp"],
        optimizers=["foreach", "fused"],
        batch_sizes=[4, 8],
        sizes=Sizes.of(PRESETS["tiny"].named()),
        device="cpu",
    )
    assert len(cases) == 8
    assert [c.batch_size for c in cases] == [4] * 4 + [8] * 4
    assert len({c.case_id for c in cases}) == 8
