"""One train step: the timing harness, the quality study and the numerics study all run
`bench.plan.step`'s, each with its named options; the options do what they say."""

import dataclasses

import pandas as pd
import pytest
import torch

from bench.measure import runner
from bench.numerics.measure import audit, training
from bench.numerics.render.sections.training import _step_note
from bench.plan import step
from bench.plan.plan import HARNESS, StepOptions, modes_of, resolve
from bench.plan.step import build, train_step
from bench.quality import job as quality
from bench.quality.config import QualityConfig
from bench.quality.train import Run, time_step
from tests.conftest import tiny_case


@pytest.fixture
def calls(monkeypatch):
    """The options of every state whose update ran through the one step's `optimizer_update`:
    every train step, phased or whole, ends there."""
    seen: list[StepOptions] = []
    real = step.optimizer_update

    def spy(s):
        seen.append(s.options)
        real(s)

    monkeypatch.setattr(step, "optimizer_update", spy)
    return seen


def test_the_harness_runs_the_one_step(calls, cpu_ceilings):
    row, _ = runner.run_case(resolve(tiny_case()), cpu_ceilings)
    assert row["status"] == "ok"
    assert calls and set(calls) == {HARNESS}


def test_the_quality_study_runs_the_one_step_with_its_options(calls):
    cfg = QualityConfig.build("cpu", {"steps": 2, "eval_every": 1, "batch_size": 2})
    Run(cfg, quality.one_run(cfg, "fp32"), 0).step(0)
    assert calls == [
        StepOptions(
            grad_clip=cfg.grad_clip,
            eval_every=1,
            betas=(0.9, cfg.beta2),
            weight_decay=cfg.weight_decay,
        )
    ]
    timing = QualityConfig.build("cpu", {"batch_size": 2, "timing_steps": 2})
    timed = time_step(timing, quality.one_run(timing, "fp32"))
    assert timed["step_options"] == calls[-1].describe()
    assert "clipped at norm 1, unscaled first" in timed["step_options"]


def test_the_numerics_study_runs_the_one_step_with_its_options(calls):
    out = training.convergence(resolve(tiny_case()), steps=2, noise=2.0, eval_every=2, heldout=16)
    assert StepOptions(eval_every=2) in calls
    assert out["runs"][0]["step_options"] == StepOptions(eval_every=2).describe()


def test_a_plan_carries_its_step_options_into_its_state():
    off = StepOptions(dropout=False, betas=(0.8, 0.9))
    plan = resolve(tiny_case(), step_options=off)
    assert plan.step_options == off and resolve(tiny_case()).step_options == HARNESS
    s = build(plan)
    assert s.options == off and not s.model.training
    assert s.optimizer.param_groups[0]["betas"] == (0.8, 0.9)
    assert plan.with_case(seed=1).step_options == off  # kept as the case changes
    assert plan.with_step_options(HARNESS).step_options == HARNESS


def test_the_clip_unscales_first_and_bounds_the_norm(monkeypatch):
    norms = []
    real = torch.nn.utils.clip_grad_norm_

    def spy(params, max_norm):
        params = list(params)
        total = real(params, max_norm)
        norms.append((total.item(), torch.stack([p.grad.norm() for p in params]).norm().item()))
        return total

    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", spy)
    for first in (True, False):
        options = StepOptions(grad_clip=1e-6, unscale_before_clip=first)
        train_step(build(resolve(tiny_case(mode="fp16-amp"), step_options=options)))
    (unscaled, clipped), (scaled, _) = norms
    # The same gradients, seen by the clip unscaled or at GradScaler's first scale (2**16).
    assert scaled / unscaled == pytest.approx(2.0**16, rel=1e-2)
    assert clipped == pytest.approx(1e-6, rel=1e-2)


def test_dropout_off_puts_the_model_in_eval_mode_and_evaluation_restores_it():
    def loss(out, y, _):
        return torch.nn.functional.cross_entropy(out, y)

    on = build(resolve(tiny_case()))
    assert on.model.training and on.options == HARNESS
    off = build(resolve(tiny_case(), step_options=StepOptions(dropout=False)))
    assert not off.model.training
    step.evaluate(off, [(off.x, off.y)], loss)
    assert not off.model.training
    step.evaluate(on, [(on.x, on.y)], loss)
    assert on.model.training


def test_options_are_checked_and_described():
    with pytest.raises(ValueError, match="grad_clip"):
        StepOptions(grad_clip=-1.0)
    assert HARNESS.describe() == "no gradient clipping; dropout on; no evaluation"
    assert "not unscaled first" in StepOptions(grad_clip=1, unscale_before_clip=False).describe()


def test_the_numerics_report_names_the_step_its_runs_trained_with():
    phrase = StepOptions(eval_every=2).describe()
    assert _step_note(pd.DataFrame({"step_options": [phrase, phrase]})) == f" The step: {phrase}."
    assert _step_note(pd.DataFrame({"mode": ["fp32"]})) == ""  # a folder older than the column


def test_the_observer_sees_each_phase_end_between_the_phases():
    seen = []

    def observe(done, loss):
        grads = [p.grad for p in s.model.parameters()]
        seen.append((done, loss.requires_grad, all(g is not None for g in grads)))

    s = build(resolve(tiny_case(mode="fp16-amp")))
    assert s.observe is None  # the harness's state shows nothing
    loss = train_step(dataclasses.replace(s, observe=observe))
    # After forward the graph is whole and no gradient exists; after backward every one does.
    assert seen == [("forward", True, False), ("backward", True, True)]
    assert loss.requires_grad and all(p.grad is None for p in s.model.parameters())


def test_the_numerics_audit_runs_the_one_step(calls):
    audit.audit_mode(resolve(tiny_case(mode="fp16-amp")))
    paths = audit.error_paths(resolve(tiny_case()), modes_of())
    assert calls == [HARNESS] * (1 + len(audit.ERROR_PATHS))
    assert [r["raised_in"] for r in paths if r["outcome"] == "raised"] == ["scaler.step(optimizer)"]
    out = training.convergence(
        resolve(tiny_case()), steps=2, noise=2.0, eval_every=2, heldout=16, trace_every=1
    )
    assert len(out["traces"]) and calls[-1] == StepOptions(eval_every=2)


def test_gradients_is_the_step_without_its_update():
    s = build(resolve(tiny_case(mode="fp16-amp")))
    before = [p.detach().clone() for p in s.model.parameters()]
    loss = step.gradients(s)
    assert loss.requires_grad and all(p.grad is not None for p in s.model.parameters())
    assert all(torch.equal(p, b) for p, b in zip(s.model.parameters(), before, strict=True))
    assert not s.optimizer.state  # Adam never stepped
