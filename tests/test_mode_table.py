"""The mode table: each card refuses what torch would refuse, each mode's context is pinned switch
by switch, and a mode registered from outside the table runs through run, numerics and quality."""

import dataclasses

import pytest
import torch

from bench.ground import catalog
from bench.ground.catalog import ModeCard
from bench.measure.runner import run_case
from bench.modes.mode import MODES
from bench.numerics.measure import jobs as numerics_jobs
from bench.plan.plan import resolve
from bench.quality import job as quality_job
from bench.quality import train as quality
from bench.quality.config import QualityConfig
from tests.conftest import tiny_case

PINNED = {
    # mode: (TF32 on, autocast dtype in the forward, GradScaler enabled, parameter dtype)
    "fp32": (False, None, False, torch.float32),
    "tf32": (True, None, False, torch.float32),
    "fp16-amp": (False, torch.float16, True, torch.float32),
    "fp16-amp-noscale": (False, torch.float16, False, torch.float32),
    "bf16-amp": (False, torch.bfloat16, False, torch.float32),
    "bf16-pure": (False, None, False, torch.bfloat16),
    "bf16-pure-sr": (False, None, False, torch.bfloat16),
    "fp16-pure": (False, None, False, torch.float16),
    "fp8-tensorwise": (False, torch.bfloat16, False, torch.float32),
    "fp8-rowwise": (False, torch.bfloat16, False, torch.float32),
}
"""Every mode's switches, written out by hand: a change to any mode's context (TF32 turned on for
all of them, say) fails here, and a new mode must be pinned."""


def _switches(device: str = "cpu") -> tuple[bool, bool, bool, torch.dtype]:
    return (
        torch.backends.cuda.matmul.allow_tf32,
        torch.backends.cudnn.allow_tf32,
        torch.is_autocast_enabled(device),
        torch.get_autocast_dtype(device),
    )


def test_every_mode_is_pinned():
    assert set(PINNED) == set(catalog.CARDS)


@pytest.mark.parametrize("name", list(PINNED))
def test_each_mode_sets_its_switches_and_restores_them(name):
    tf32, autocast, scaled, params = PINNED[name]
    mode, before = MODES[name], _switches()
    with mode.context("cpu", forward=True):
        matmul, cudnn, enabled, dtype = _switches()
        assert (matmul, cudnn) == (tf32, tf32)
        assert enabled == (autocast is not None)
        if autocast is not None:
            assert dtype == autocast
    with mode.context("cpu"):  # backward and the optimizer: TF32 as the mode wants, no autocast
        matmul, _, enabled, _ = _switches()
        assert matmul == tf32 and not enabled
    assert _switches() == before
    assert mode.scaler("cpu").is_enabled() == scaled
    assert (mode.param_dtype or torch.float32) == params


@pytest.mark.parametrize(
    ("fields", "needle"),
    [
        ({"kind": "cast", "low_dtype": "float16", "scale_loss": True}, "cannot unscale float16"),
        ({"kind": "autocast"}, "needs low_dtype"),
        ({"kind": "float32", "low_dtype": "bfloat16"}, "runs no low dtype"),
        ({"kind": "float8", "low_dtype": "float8"}, "fp8_scaling"),
        ({"kind": "autocast", "low_dtype": "float16", "fp8_scaling": "rowwise"}, "fp8_scaling"),
        (
            {"kind": "autocast", "low_dtype": "bfloat16", "stochastic_round": True},
            "stochastic_round",
        ),
    ],
)
def test_a_card_torch_would_refuse_fails_when_it_is_made(fields, needle):
    with pytest.raises(ValueError, match=needle) as err:
        ModeCard(name="bad", label="bad", colour="#000000", **fields)
    assert str(err.value).startswith("mode 'bad': ")


def test_a_mode_is_registered_once():
    with pytest.raises(ValueError, match="in the table already"):
        catalog.register(catalog.CARDS["fp32"])


NEW = ModeCard(
    name="bf16-amp-scaled",
    label="bf16 autocast with GradScaler",
    kind="autocast",
    colour="#17becf",
    low_dtype="bfloat16",
    scale_loss=True,
    baseline="bf16-amp",
    grid="asked",
)
"""A mode no table row has: bf16 autocast with a (needless) GradScaler."""


@pytest.fixture
def registered():
    catalog.register(NEW)
    try:
        yield NEW.name
    finally:
        del catalog.CARDS[NEW.name]


def test_a_registered_mode_runs_through_run_numerics_and_quality(registered, cpu_ceilings):
    case = tiny_case(mode=registered)
    row, samples = run_case(resolve(case), cpu_ceilings)
    assert row["status"] == "ok" and row["scale_loss"] and row["autocast_dtype"] == "bfloat16"
    assert samples["total"]

    job = numerics_jobs.Job(kind="convergence", case=case, steps=4, eval_every=2, heldout=16)
    tables = numerics_jobs.run_job(job)
    assert "failed" not in tables, tables.get("failed")
    assert {r["mode"] for r in tables["runs"]} == {registered}

    tiny = {"steps": 2, "eval_every": 2, "batch_size": 2, "heldout_limit": 2, "warmup": 1}
    cfg = QualityConfig.build("cpu", {**tiny, "modes": ("fp32", registered)})
    rows = quality.train(cfg, quality_job.one_run(cfg, registered), 0)
    assert [r["status"] for r in rows["runs"]] == ["ok"]


def test_the_registered_mode_is_gone_after_its_test():
    assert NEW.name not in catalog.CARDS and NEW.name not in MODES


def test_fp16_pure_is_one_row_run_only_when_asked(cpu_ceilings):
    card = catalog.CARDS["fp16-pure"]
    assert card.param_dtype == "float16" and not card.scale_loss
    assert card.name not in catalog.default_modes()
    row, _ = run_case(resolve(tiny_case(mode="fp16-pure")), cpu_ceilings)
    # Adam's eps underflows in float16: a finite row or a `nonfinite` one, never a crash.
    assert row["status"] in ("ok", "nonfinite"), row["error"]
    assert row["param_dtype"] == "float16"


def test_a_plan_takes_another_mode_only_by_resolving():
    plan = resolve(tiny_case())
    other = plan.with_mode(MODES["bf16-amp"])
    assert other.case.mode == "bf16-amp" and other.workload is plan.workload
    with pytest.raises(ValueError, match="mode needs a new plan"):
        plan.with_case(mode="fp32")
    assert plan.with_case(batch_size=3).case.batch_size == 3
    assert dataclasses.replace(plan.case, seed=1) != plan.case
