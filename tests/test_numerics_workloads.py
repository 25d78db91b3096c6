"""The numerics study for any workload: each workload's learnable task, and whole studies of the
transformer and of an own model through the command line, with their observation points, tables
and report taken from the workload, never from the MLP's names."""

import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest
import torch

from bench.cli.main import main
from bench.numerics.measure import tables
from bench.workloads import gpt, tasks
from bench.workloads.registry import get, make_case

STUDY = [
    "numerics",
    "--device",
    "cpu",
    "--modes",
    "fp32,fp16-amp,fp16-amp-noscale,bf16-amp",
    "--census-batch-sizes",
    "4",
    "--histogram-batch",
    "4",
    "--conv-batch-sizes",
    "4",
    "--seeds",
    "0",
    "--steps",
    "6",
    "--eval-every",
    "3",
    "--long-steps",
    "0",
    "--checkpoints",
    "0,3",
    "--heldout",
    "8",
]
"""A small study: one census trajectory and four convergence runs of six steps."""


def _study(tmp_path: Path, *argv: str) -> Path:
    assert main([*STUDY, *argv, "--results-dir", str(tmp_path)]) == 0
    (folder,) = tmp_path.iterdir()
    return folder


@pytest.fixture(scope="module")
def gpt_study(tmp_path_factory) -> Path:
    return _study(tmp_path_factory.mktemp("gpt"), "--model", "gpt", "--preset", "tiny")


def test_the_markov_task_is_deterministic_and_its_targets_follow_the_chain():
    size = gpt.PRESETS["tiny"]
    task = get("gpt").make_task(size, 3, 2.0, "cpu")
    x, y = task.sample(4, 70)  # step 70: the second chunk of 64 steps
    again = get("gpt").make_task(size, 3, 2.0, "cpu").sample(4, 70)
    assert torch.equal(x, again[0]) and torch.equal(y, again[1])
    assert x.shape == y.shape == (4, size.context)
    assert torch.equal(x[:, 1:], y[:, :-1])  # targets are the next tokens
    succ, probs = task.table()
    # Every transition of the batch is one of the chain's, with a positive probability.
    assert bool((succ[x] == y.unsqueeze(-1)).any(-1).all())
    assert torch.allclose(probs.sum(1), torch.ones(task.states))
    other = task.sample(4, 71)
    assert not torch.equal(x, other[0])
    held = task.sample(4, tasks.HELDOUT_STREAM)
    assert not torch.equal(held[0], x)
    true = task.true_loss(held)
    # The chain's own cross-entropy: below the uniform guess and at most log(successors) + the
    # spread of the successors' probabilities.
    assert 0 < true < math.log(task.successors) < math.log(size.vocab)


def test_the_prototype_task_keeps_the_mlps_batches_and_knows_its_bayes_loss():
    size = get("mlp").size("tiny")
    task = get("mlp").make_task(size, 0, 2.0, "cpu")
    x, y = task.sample(64, 5)
    # The batches of the task as the study drew them before workloads owned it.
    gen = torch.Generator().manual_seed(0)
    protos = torch.randn(size.num_classes, size.input_size, generator=gen)
    gen = torch.Generator().manual_seed(5 + 1)
    y0 = torch.randint(0, size.num_classes, (64,), generator=gen)
    eps = torch.randn(64, size.input_size, generator=gen)
    assert torch.equal(y, y0)
    assert torch.allclose(x, (protos[y0] + 2.0 * eps) / math.sqrt(5.0))
    bayes = task.true_loss(task.sample(4096, tasks.HELDOUT_STREAM))
    assert 0 <= bayes < math.log(size.num_classes)


def test_a_pool_task_cycles_the_workloads_own_batches():
    workload = get("examples.own_model:workload")
    task = workload.make_task(workload.size("default"), 1, 2.0, "cpu")
    a, b = task.sample(2, 3), task.sample(2, 3 + task.pool)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[0], task.sample(2, 4)[0])
    assert task.true_loss(a) is None
    assert "pool" in task.description


def test_the_transformer_learns_its_task_on_the_cpu():
    """The task is learnable: a tiny transformer's held-out loss falls most of the way from the
    uniform guess, log(vocab), to the chain's own cross-entropy in 80 steps."""
    from bench.numerics.measure import training
    from bench.plan.plan import resolve

    case = make_case(
        "gpt", "tiny", mode="fp32", optimizer="fused", batch_size=8, device="cpu", lr=1e-2
    )
    out = training.convergence(resolve(case), steps=80, noise=2.0, eval_every=40, heldout=16)
    first, last = out["evals"][0]["heldout_loss"], out["evals"][-1]["heldout_loss"]
    true = out["runs"][0]["true_heldout_loss"]
    assert first == pytest.approx(math.log(gpt.PRESETS["tiny"].vocab), rel=0.1)
    assert last - true < 0.5 * (first - true)


def test_the_transformer_study_observes_its_own_modules(gpt_study):
    t = tables.load(gpt_study)
    size = gpt.PRESETS["tiny"]
    expected = ["embed"]
    for i in range(size.layers):
        expected += [f"blocks.{i}.attn", f"blocks.{i}.mlp"]
    expected += ["norm", "head"]
    census = t["census"]
    acts = census[census["kind"] == tables.ACTIVATION_GRAD]
    assert list(dict.fromkeys(acts["module"])) == expected
    produced = set(census.loc[census["kind"] == tables.PRODUCED_GRAD, "module"])
    assert "blocks.0.attn.qkv.weight" in produced and "head.weight" in produced
    audit = t["audit"]
    logits = audit[(audit["kind"] == tables.ACTIVATION) & (audit["module"] == "head")]
    assert set(logits["tensor"]) == {"logits (head output)"}
    assert t["audit_json"]["chained"] == "blocks.0.attn.qkv.weight"
    assert t["audit_json"]["chains"]["fp16-amp"][-1].endswith("AccumulateGrad")
    hist = t["histogram"]
    assert set(hist["module"]) == {tables.POOLED, "head"}
    runs = t["runs"]
    assert (runs["true_heldout_loss"] < math.log(size.vocab)).all()
    env = json.loads((gpt_study / "env.json").read_text())
    assert env["numerics_config"]["model"] == "gpt"
    assert "Markov chain" in env["numerics_config"]["task"]


def test_the_transformer_studys_report_speaks_of_its_modules(gpt_study):
    report = (gpt_study / "report.md").read_text()
    assert "Model gpt, preset tiny" in report
    assert "Markov chain" in report and "A perfect model's held-out loss" in report
    assert "blocks.*.attn output ×2" in report  # repeated blocks folded in the audit
    assert "Autograd chain from the loss back to `blocks.0.attn.qkv.weight`" in report
    assert "logits' alone, head" in report
    answer = report.split("## 5. Answer", 1)[1]
    assert "embed to head" in answer
    assert not re.search(r"\bfc[123]\b", report)  # the MLP's modules are not this model's


def test_an_own_models_study_runs_on_its_pool_of_batches(tmp_path):
    folder = _study(tmp_path, "--model", "examples.own_model:workload", "--modes", "fp32,fp16-amp")
    t = tables.load(folder)
    acts = t["census"][t["census"]["kind"] == tables.ACTIVATION_GRAD]
    # nn.Sequential's children, by index; the last one's output is the logits.
    assert list(dict.fromkeys(acts["module"])) == [str(i) for i in range(10)]
    assert t["runs"]["true_heldout_loss"].isna().all()
    assert t["failed"].empty
    report = (folder / "report.md").read_text()
    assert "a pool of 16 cycled" in report
    assert "A perfect model's held-out loss" not in report


def test_a_bad_model_is_one_line(tmp_path, capsys):
    assert main([*STUDY, "--model", "nope:factory", "--results-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ampbench: error: --model nope:factory") and "\n" not in err
    assert not any(tmp_path.iterdir())


def test_a_preset_of_another_model_is_refused(tmp_path, capsys):
    argv = [*STUDY, "--model", "gpt", "--preset", "seed", "--results-dir", str(tmp_path)]
    assert main(argv) == 2
    assert "--preset" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_a_transformer_study_resumes_with_its_model(gpt_study, tmp_path):
    from bench.numerics.measure.config import NumericsConfig

    env = json.loads((gpt_study / "env.json").read_text())
    cfg = NumericsConfig.from_record(env["numerics_config"], workers=1)
    assert cfg.model == "gpt" and cfg.preset == "tiny"
    assert cfg.size == gpt.PRESETS["tiny"]
    case = cfg.case("fp32", 4, 0)
    assert case.model == "gpt" and case.preset == "tiny"
    assert isinstance(pd.read_csv(gpt_study / "summary.csv"), pd.DataFrame)
