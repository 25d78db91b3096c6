"""A new axis is one field of `Case`: the run's config, its option, case ids and the index's
grid line follow from the field alone."""

import dataclasses

import pytest

from bench.cases import case as case_module
from bench.cases import checks, grid
from bench.cases.case import Case, Sweep
from bench.cli import build_parser
from bench.jobs.configs import run_config

ACCUM = Sweep("accums", "accum")
WithAccum = dataclasses.make_dataclass(
    "WithAccum",
    [
        (
            "accum",
            int,
            dataclasses.field(default=1, metadata={"check": checks.POSITIVE_INT, "sweep": ACCUM}),
        )
    ],
    bases=(Case,),
    frozen=True,
    kw_only=True,
)


@pytest.fixture
def accum(monkeypatch):
    monkeypatch.setattr(case_module, "Case", WithAccum)
    return WithAccum


def _cfg(**given):
    return run_config(
        device="cpu", preset="tiny", modes=["fp32"], optimizers=["fused"], batch_sizes=[4], **given
    )


def test_the_run_config_sweeps_the_new_axis(accum):
    cfg = _cfg(accums=[1, 2])
    assert cfg.accums == (1, 2) and cfg.record()["accums"] == [1, 2]
    assert [c.accum for c in cfg.cases()] == [1, 2]
    assert grid.RunConfig.from_record(cfg.record()) == cfg
    assert _cfg().accums == (1,)  # the field's default alone


def test_an_old_record_takes_the_new_axis_default(accum):
    old = {k: v for k, v in _cfg().record().items() if k != "accums"}
    assert grid.RunConfig.from_record(old).accums == (1,)


def test_the_run_has_an_option_for_the_new_axis(accum):
    args = build_parser().parse_args(["run", "--accums", "1,4"])
    assert args.accums == [1, 4]
    with pytest.raises(Exception, match="accum '0' is not a positive integer"):
        build_parser().parse_args(["run", "--accums", "0"])


def test_case_ids_and_the_grid_line_follow(accum):
    cases = _cfg(accums=[1, 2]).cases()
    assert [c.case_id.endswith("/accum=2") for c in cases] == [False, True]
    record = _cfg(accums=[1, 2]).record()
    assert grid.describe(record) == "fp32 × batch 4 × fused, accum 1,2".replace(", ", " × ")
    assert grid.describe(_cfg().record()) == "fp32 × batch 4 × fused"


def test_describe_is_what_the_index_showed():
    record = {
        "modes": ["fp32", "bf16-amp"],
        "batch_sizes": [256, 1024, 4096],
        "optimizers": ["fused"],
    }
    assert grid.describe(record) == "fp32,bf16-amp × batch 256,1024,4096 × fused"
    many = {**record, "variants": ["eager", "compile", "cudagraph"], "parallels": ["none", "ddp"]}
    assert grid.describe(many) == "2 modes × batch 256–4096 × fused × 3 variants × none,ddp"
    assert grid.describe({}) == ""
